// The HTTP server's limits and timeouts as command-line flags, the same for every binary that
// serves: declared on a flag_set against a server_config, and checked.
#pragma once

#include "common/config_util.hpp"
#include "common/http/server.hpp"

#include <string>
#include <vector>

namespace lanes::common::http {

// The --help sections the server's flags go to: each binary names its own.
struct server_flag_sections {
    std::string listening = "Listening"; // connections, descriptors, shutdown
    std::string limits = "Limits";       // request sizes and the client's timeouts
    std::string tls = "TLS";
};

void add_server_flags(flag_set& flags, server_config& cfg,
                      const server_flag_sections& sections = {});
// Appends a message for every value out of its range.
void check_server_config(const server_config& cfg, std::vector<std::string>& errors);

} // namespace lanes::common::http
