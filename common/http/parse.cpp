#include "common/http/parse.hpp"

#include "common/http/field_syntax.hpp"

#include <boost/beast/http/error.hpp>
#include <boost/beast/http/verb.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>

namespace lanes::common::http {

using namespace syntax;

namespace {

// A request target: visible ASCII only.
bool plain_target(std::string_view s) {
    const auto* p = reinterpret_cast<const unsigned char*>(s.data());
    unsigned char bad = 0;
    for (std::size_t i = 0; i < s.size(); ++i) {
        const unsigned char u = p[i];
        bad |= static_cast<unsigned char>((u <= 0x20) | (u >= 0x7f));
    }
    return bad == 0;
}

} // namespace

std::size_t parse_plain_request(std::string_view data, std::size_t header_limit,
                                std::size_t body_limit, request& out) {
    const auto blank = data.find("\r\n\r\n");
    if (blank == std::string_view::npos)
        return 0;
    const std::size_t header_size = blank + 2 * crlf.size();
    if (header_size > header_limit)
        return 0;

    // Request line: method SP target SP HTTP/1.x
    const auto eol = data.find(crlf);
    const std::string_view line = data.substr(0, eol);
    const auto sp1 = line.find(' ');
    const auto sp2 = line.rfind(' ');
    if (sp1 == std::string_view::npos || sp2 <= sp1 + 1)
        return 0;
    const std::string_view method = line.substr(0, sp1);
    const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    const std::string_view version = line.substr(sp2 + 1);
    const beast_http::verb verb = beast_http::string_to_verb(method);
    if (verb == beast_http::verb::unknown || !target.starts_with('/') || !plain_target(target) ||
        version.size() != 8 || !version.starts_with("HTTP/1.") ||
        (version[7] != '0' && version[7] != '1'))
        return 0;
    out.start_in(data.substr(0, header_size), verb, method, target, version[7] == '1' ? 11 : 10);

    bool has_length = false;
    std::uint64_t length = 0;
    int hosts = 0;
    const auto fields =
        for_each_field(data, eol + crlf.size(), [&](std::string_view name, std::string_view value) {
            switch (name.size()) {
            case 4:
                if (field_name_is(name, "host"))
                    ++hosts;
                break;
            case 6: // Expect: 100-continue needs an interim answer
                if (field_name_is(name, "expect"))
                    return false;
                break;
            case 10: // Connection: a token list, else Beast's parser judges it
                if (field_name_is(name, "connection") && !token_list(value))
                    return false;
                break;
            case 14:
                if (field_name_is(name, "content-length")) {
                    if (has_length || !parse_length(value, length))
                        return false;
                    has_length = true;
                }
                break;
            case 17: // a chunked body, or a coding the server must refuse
                if (field_name_is(name, "transfer-encoding"))
                    return false;
                break;
            default:
                break;
            }
            out.add(name, value);
            return true;
        });
    if (fields != fields_end::blank_line)
        return 0;
    if (hosts > 1 || (hosts == 0 && version[7] == '1'))
        return 0; // a missing or repeated Host: refused on the parser's path
    if (length > body_limit || data.size() - header_size < length)
        return 0; // over the limit (Beast answers 413), or the body is not all here yet
    out.body().assign(data.substr(header_size, static_cast<std::size_t>(length)));
    return header_size + static_cast<std::size_t>(length);
}

// Setting bit 5 of a tchar byte turns exactly the upper-case letters into their lower-case forms
// and no other tchar into a byte `lower` can hold (a '-' could only come from CR, a digit only
// from a control byte), so eight bytes compare at once.
bool field_name_is(std::string_view name, std::string_view lower) {
    const std::size_t n = name.size();
    if (n != lower.size())
        return false;
    if (n >= 8) {
        const auto load = [](const char* at) {
            std::uint64_t v;
            std::memcpy(&v, at, sizeof v);
            return v;
        };
        constexpr std::uint64_t case_bits = 0x2020202020202020ull;
        for (std::size_t i = 0; i + 8 < n; i += 8)
            if ((load(name.data() + i) | case_bits) != load(lower.data() + i))
                return false;
        return (load(name.data() + n - 8) | case_bits) == load(lower.data() + n - 8);
    }
    for (std::size_t i = 0; i < n; ++i)
        if ((name[i] | 0x20) != lower[i])
            return false;
    return true;
}

bool iequals_ascii(std::string_view a, std::string_view b) {
    if (a.size() != b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != lower(b[i]))
            return false;
    return true;
}

bool names_other_fields(std::string_view connection) {
    bool other = false;
    for_each_item(connection, [&](std::string_view option) {
        other = other || !(iequals_ascii(option, "close") || iequals_ascii(option, "keep-alive"));
    });
    return other;
}

bool list_has(std::string_view list, std::string_view token) {
    bool found = false;
    for_each_item(list,
                  [&](std::string_view item) { found = found || iequals_ascii(item, token); });
    return found;
}

std::string_view trim_ows(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

} // namespace lanes::common::http
