#include "common/http/url.hpp"

#include <algorithm>
#include <charconv>

namespace lanes::common::http {

std::string url::authority() const {
    const bool v6 = host.find(':') != std::string::npos;
    return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string url::str() const {
    return (tls ? "https://" : "http://") + authority() + base_path;
}

namespace {

bool is_alnum(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

bool is_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

// RFC 3986 pchar without '%' (checked with its two digits) plus '/'.
bool is_path_char(char c) {
    return is_alnum(c) || std::string_view("-._~!$&'()*+,;=:@/").find(c) != std::string_view::npos;
}

} // namespace

bool valid_host(std::string_view host) {
    if (host.empty() || host.size() > 253)
        return false;
    if (host.find(':') != std::string_view::npos) // IPv6: hex groups, colons, a dotted tail
        return std::all_of(host.begin(), host.end(),
                           [](char c) { return is_hex(c) || c == ':' || c == '.'; });
    if (host.front() == '.' || host.front() == '-')
        return false;
    return std::all_of(host.begin(), host.end(),
                       [](char c) { return is_alnum(c) || c == '-' || c == '.' || c == '_'; });
}

std::string printable(std::string_view text) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out;
    out.reserve(text.size());
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (c >= 0x20 && c < 0x7f && c != '\\') {
            out += ch;
            continue;
        }
        out += "\\x";
        out += digits[c >> 4];
        out += digits[c & 0xf];
    }
    return out;
}

std::optional<url> parse_url(std::string_view text, std::string* error) {
    auto fail = [&](std::string why) -> std::optional<url> {
        if (error)
            *error = "invalid URL '" + printable(text.substr(0, 256)) +
                     (text.size() > 256 ? "...'" : "'") + ": " + why;
        return std::nullopt;
    };
    if (text.size() > max_url_length)
        return fail("longer than " + std::to_string(max_url_length) + " bytes");
    std::string_view rest = text;
    url u;
    if (rest.starts_with("https://")) {
        rest.remove_prefix(8);
        u.tls = true;
        u.port = 443;
    } else if (rest.starts_with("http://")) {
        rest.remove_prefix(7);
    } else if (rest.find("://") != std::string_view::npos) {
        return fail("only http:// and https:// URLs are supported");
    }
    const auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    if (slash != std::string_view::npos) {
        std::string_view path = rest.substr(slash);
        while (path.ends_with('/'))
            path.remove_suffix(1);
        for (std::size_t i = 0; i < path.size(); ++i) {
            if (path[i] == '%') {
                if (i + 2 >= path.size() || !is_hex(path[i + 1]) || !is_hex(path[i + 2]))
                    return fail("a '%' in the path not followed by two hex digits");
                i += 2;
            } else if (path[i] == '?' || path[i] == '#') {
                return fail("a base URL takes no query or fragment");
            } else if (!is_path_char(path[i])) {
                return fail("the path holds a byte a URL cannot (space, control, non-ASCII or "
                            "one of \"<>\\^`{|}); %-encode it");
            }
        }
        u.base_path = std::string(path);
    }
    if (authority.find('@') != std::string_view::npos)
        return fail("user info ('user@') is not taken; use --replica-api-key");
    std::string_view port_text;
    if (authority.starts_with('[')) {
        const auto close = authority.find(']');
        if (close == std::string_view::npos)
            return fail("unterminated IPv6 address");
        u.host = std::string(authority.substr(1, close - 1));
        if (close + 1 < authority.size()) {
            if (authority[close + 1] != ':')
                return fail("expected ':' after IPv6 address");
            port_text = authority.substr(close + 2);
        }
    } else {
        const auto colon = authority.rfind(':');
        u.host = std::string(authority.substr(0, colon));
        if (colon != std::string_view::npos)
            port_text = authority.substr(colon + 1);
    }
    if (u.host.empty())
        return fail("missing host");
    if (!valid_host(u.host))
        return fail("the host is neither a DNS name (letters, digits, '-', '.', '_') nor an IP "
                    "address");
    if (!port_text.empty()) {
        unsigned value = 0;
        auto [p, ec] =
            std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
        if (ec != std::errc{} || p != port_text.data() + port_text.size() || value == 0 ||
            value > 65535)
            return fail("bad port '" + printable(port_text.substr(0, 16)) + "'");
        u.port = static_cast<unsigned short>(value);
    }
    // Written out (scheme and port added) it must still be one this function takes (found by
    // the url fuzz target: "host/..." of 2040 bytes printed past the limit).
    if (u.str().size() > max_url_length)
        return fail("longer than " + std::to_string(max_url_length) + " bytes as a URL");
    return u;
}

} // namespace lanes::common::http
