// A replica's base URL: host, port and path prefix, as flags, the admin API and DNS give them.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace lanes::common::http {

struct url {
    std::string host; // without brackets for IPv6
    unsigned short port = 80;
    std::string base_path; // "" or "/prefix" (no trailing slash)
    bool tls = false;      // https: TLS to the server (port 443 unless given)
    // With tls: the name sent as SNI and checked against the certificate, when the host is an
    // address the name resolved to (DNS discovery); "" means the host itself.
    std::string tls_name;

    std::string authority() const; // host:port, IPv6 in brackets
    std::string str() const;       // http(s)://authority + base_path
};

// Accepts "http://host[:port][/path]", "https://host[:port][/path]" and "host:port" (http).
// Whatever the source (a flag, the config file, the admin API), the text is held to RFC 3986: no
// user info, query or fragment; the host a DNS name (letters, digits, '-', '.', '_'), an IPv4
// address or a bracketed IPv6 one; the path made of unreserved characters, sub-delims, ':', '@',
// '/' and well-formed %-escapes (so no space, CR, LF or other control, and no raw non-ASCII byte:
// UTF-8 goes %-encoded); at most max_url_length bytes. The error quotes the text with every byte
// that is not printable ASCII written as \xHH, so it cannot forge log lines.
inline constexpr std::size_t max_url_length = 2048;
std::optional<url> parse_url(std::string_view text, std::string* error = nullptr);

// A host name or address as a URL's authority holds it (IPv6 without its brackets).
bool valid_host(std::string_view host);

// `text` with each byte that is not printable ASCII (and each backslash) written as \xHH.
std::string printable(std::string_view text);

} // namespace lanes::common::http
