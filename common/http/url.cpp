#include "common/http/url.hpp"

#include <charconv>

namespace lanes::common::http {

std::string url::authority() const {
    const bool v6 = host.find(':') != std::string::npos;
    return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string url::str() const {
    return "http://" + authority() + base_path;
}

std::optional<url> parse_url(std::string_view text, std::string* error) {
    auto fail = [&](std::string why) -> std::optional<url> {
        if (error)
            *error = "invalid URL '" + std::string(text) + "': " + why;
        return std::nullopt;
    };
    std::string_view rest = text;
    if (rest.starts_with("https://"))
        return fail("https is not supported; put TLS in front of lanes or use http://");
    if (rest.starts_with("http://"))
        rest.remove_prefix(7);
    else if (rest.find("://") != std::string_view::npos)
        return fail("only http:// URLs are supported");
    url u;
    const auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    if (slash != std::string_view::npos) {
        std::string_view path = rest.substr(slash);
        while (path.ends_with('/'))
            path.remove_suffix(1);
        u.base_path = std::string(path);
    }
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
    if (!port_text.empty()) {
        unsigned value = 0;
        auto [p, ec] =
            std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
        if (ec != std::errc{} || p != port_text.data() + port_text.size() || value == 0 ||
            value > 65535)
            return fail("bad port '" + std::string(port_text) + "'");
        u.port = static_cast<unsigned short>(value);
    }
    return u;
}

} // namespace lanes::common::http
