// The HTTP server's limits and timeouts as command-line flags, the same for every binary that
// serves: declared on a flag_set against a server_config, and checked.
#pragma once

#include "common/config_util.hpp"
#include "common/http/server.hpp"

#include <string>
#include <vector>

namespace lanes::common::http {

void add_server_flags(flag_set& flags, server_config& cfg);
// Appends a message for every value out of its range.
void check_server_config(const server_config& cfg, std::vector<std::string>& errors);

} // namespace lanes::common::http
