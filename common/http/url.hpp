// A replica's base URL: host, port and path prefix, as flags, the admin API and DNS give them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace lanes::common::http {

struct url {
    std::string host; // without brackets for IPv6
    unsigned short port = 80;
    std::string base_path; // "" or "/prefix" (no trailing slash)

    std::string authority() const; // host:port, IPv6 in brackets
    std::string str() const;       // http://authority + base_path
};

// Accepts "http://host[:port][/path]" and "host:port"; https is refused with a message.
std::optional<url> parse_url(std::string_view text, std::string* error = nullptr);

} // namespace lanes::common::http
