#include "common/http/parse.hpp"

#include <boost/beast/http/error.hpp>
#include <boost/beast/http/verb.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <limits>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace lanes::common::http {

namespace {

namespace errc = boost::beast::http;
constexpr std::string_view crlf = "\r\n";

constexpr char lower(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// `a` (any case) equals `lower_b`, which is in lower case.
bool iequals(std::string_view a, std::string_view lower_b) {
    if (a.size() != lower_b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != lower_b[i])
            return false;
    return true;
}

bool digit(char c) {
    return c >= '0' && c <= '9';
}

// RFC 9110 tchar: the bytes a field name may hold.
enum : unsigned char { tchar = 1 };
constexpr std::array<unsigned char, 256> byte_class = [] {
    std::array<unsigned char, 256> t{};
    for (int c = 0; c < 256; ++c) {
        const bool alnum =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        if (alnum || std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) !=
                         std::string_view::npos)
            t[c] |= tchar;
    }
    return t;
}();

// Without early exits, so the loops stay branch-free (and the second one vectorizes).
bool all_tchar(std::string_view s) {
    unsigned char all = tchar;
    for (const char c : s)
        all &= byte_class[static_cast<unsigned char>(c)];
    return all & tchar;
}

// Field values (and the reason phrase): printable ASCII, obs-text and tabs only, as Beast's
// parser requires; the request fast path leaves anything else to Beast to judge. `s` may be read
// past its end up to `limit` (the end of the header it lies in): with SSE2, sixteen bytes a load,
// the bytes past `s` masked off, so a short value costs one step.
bool plain_value(std::string_view s, const char* limit) {
    const char* p = s.data();
    const char* const end = p + s.size();
#if defined(__SSE2__)
    const __m128i control_max = _mm_set1_epi8(0x1f);
    const __m128i tab = _mm_set1_epi8('\t');
    const __m128i del = _mm_set1_epi8(0x7f);
    while (p < end && limit - p >= 16) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        const __m128i control = _mm_andnot_si128(
            _mm_cmpeq_epi8(x, tab), _mm_cmpeq_epi8(_mm_max_epu8(x, control_max), control_max));
        auto bad =
            static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(control, _mm_cmpeq_epi8(x, del))));
        if (end - p < 16)
            bad &= (1u << (end - p)) - 1;
        if (bad != 0)
            return false;
        p += 16;
    }
#endif
    unsigned char bad = 0;
    for (; p < end; ++p) {
        const auto u = static_cast<unsigned char>(*p);
        bad |= static_cast<unsigned char>((u < 0x20) & (u != '\t')) |
               static_cast<unsigned char>(u == 0x7f);
    }
    return bad == 0;
}

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

std::string_view trim(std::string_view s) {
    return trim_ows(s);
}

// Calls f on each element of a comma-separated list (trimmed, empty ones skipped).
template <typename F>
void for_each_item(std::string_view list, F&& f) {
    while (!list.empty()) {
        const auto comma = list.find(',');
        const std::string_view item = trim(list.substr(0, comma));
        if (!item.empty())
            f(item);
        if (comma == std::string_view::npos)
            break;
        list.remove_prefix(comma + 1);
    }
}

// A comma-separated list of tokens (RFC 9110 #token, empty items allowed), as Beast's parser
// requires of Connection: anything else is a malformed field, read the same way on both paths.
bool token_list(std::string_view list) {
    bool ok = true;
    for_each_item(list, [&ok](std::string_view item) { ok = ok && all_tchar(item); });
    return ok;
}

// A Transfer-Encoding list: codings as plain tokens. RFC 9112 lets a coding carry parameters
// after ';', but Beast's parser reads the field as a token list and so does not see "chunked"
// after one: no engine sends them, and a field two parsers read two ways is malformed (found by
// the response fuzz target).
bool coding_list(std::string_view list) {
    bool ok = true;
    std::size_t codings = 0; // a field with no coding at all (empty, or commas) frames nothing
    for_each_item(list, [&](std::string_view item) {
        ok = ok && all_tchar(item);
        ++codings;
    });
    return ok && codings > 0;
}

// Walks the field lines from `pos` (the start of the first) to the blank line that ends the
// header, calling on_field(name, value) with the value trimmed; on_field returns false to stop.
enum class fields_end { blank_line, bad_name, bad_value, stopped };
template <typename F>
fields_end for_each_field(std::string_view header, std::size_t pos, F&& on_field) {
    for (;;) {
        const auto end = header.find(crlf, pos);
        if (end == pos)
            return fields_end::blank_line;
        const std::string_view text = header.substr(pos, end - pos);
        const auto colon = text.find(':');
        const std::string_view name = text.substr(0, colon);
        // A missing or leading colon, and obsolete line folding (a leading space), are bad names.
        if (colon == 0 || colon == std::string_view::npos || !all_tchar(name))
            return fields_end::bad_name;
        const std::string_view value = trim(text.substr(colon + 1));
        if (!plain_value(value, header.data() + header.size()))
            return fields_end::bad_value;
        if (!on_field(name, value))
            return fields_end::stopped;
        pos = end + crlf.size();
    }
}

// A Content-Length value: digits only, at least one, within 64 bits.
bool parse_length(std::string_view value, std::uint64_t& n) {
    n = 0;
    if (value.empty())
        return false;
    for (const char c : value) {
        if (!digit(c) || n > (std::numeric_limits<std::uint64_t>::max() - 9) / 10)
            return false;
        n = n * 10 + static_cast<std::uint64_t>(c - '0');
    }
    return true;
}

// Status line: HTTP/1.x SP 3DIGIT [SP reason]. A 101 is refused: we never ask to switch
// protocols, and what follows would not be HTTP. The reason phrase holds no control bytes but
// tabs (a bare CR or LF in it is malformed).
bool parse_status_line(std::string_view line, unsigned& version, int& status,
                       boost::system::error_code& ec) {
    if (line.size() < 12 || !line.starts_with("HTTP/1.") || (line[7] != '0' && line[7] != '1') ||
        line[8] != ' ') {
        ec = errc::error::bad_version;
        return false;
    }
    version = line[7] == '1' ? 11 : 10;
    if (!digit(line[9]) || !digit(line[10]) || !digit(line[11]) ||
        (line.size() > 12 && line[12] != ' ') || line[9] == '0') {
        ec = errc::error::bad_status;
        return false;
    }
    status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
    if (status == 101 || !plain_value(line.substr(std::min<std::size_t>(line.size(), 13)),
                                      line.data() + line.size())) {
        ec = errc::error::bad_status;
        return false;
    }
    return true;
}

} // namespace

std::string_view response_head::field(std::string_view wanted) const {
    for (const auto& f : fields_)
        if (iequals_ascii(slice(f.name), wanted))
            return slice(f.value);
    return {};
}

void response_head::decide_framing(const framing_fields& f, bool head_request) {
    keep_alive_ = version_ == 11 ? !f.close : f.keep && !f.close;
    // Transfer-Encoding in an HTTP/1.0 answer: framing a peer may read differently, so the
    // connection is not used again (RFC 9112, 6.1). (With a Content-Length too it was refused.)
    if (f.has_te && version_ == 10)
        keep_alive_ = false;
    content_length_ = 0;
    if (head_request || status_ < 200 || status_ == 204 || status_ == 304) {
        framing_ = body_framing::none;
    } else if (f.has_te) {
        framing_ = f.chunked_last ? body_framing::chunked : body_framing::until_close;
    } else if (f.has_length) {
        framing_ = body_framing::length;
        content_length_ = f.length;
    } else {
        framing_ = body_framing::until_close;
    }
    if (framing_ == body_framing::until_close)
        keep_alive_ = false;
}

std::size_t response_head::parse(std::string_view data, bool head_request, std::size_t limit,
                                 boost::system::error_code& ec) {
    ec = {};
    const auto blank = data.find("\r\n\r\n");
    if (blank == std::string_view::npos) {
        if (data.size() > limit)
            ec = errc::error::header_limit;
        return 0;
    }
    const std::size_t total = blank + 2 * crlf.size();
    if (total > limit || total > std::numeric_limits<std::uint32_t>::max()) {
        ec = errc::error::header_limit;
        return 0;
    }
    bytes_.assign(data.data(), total);
    fields_.clear();
    const std::string_view h = bytes_;

    const auto eol = h.find(crlf);
    if (!parse_status_line(h.substr(0, eol), version_, status_, ec))
        return 0;

    framing_fields f;
    connection_names_fields_ = false;
    bool bad_list = false;     // a Connection or Transfer-Encoding field that is not a list
    bool chunked_seen = false; // in this or an earlier Transfer-Encoding field
    const auto fields =
        for_each_field(h, eol + crlf.size(), [&](std::string_view name, std::string_view value) {
            const auto offset = [&](std::string_view part) {
                return static_cast<std::uint32_t>(part.data() - h.data());
            };
            fields_.push_back({{offset(name), static_cast<std::uint32_t>(name.size())},
                               {offset(value), static_cast<std::uint32_t>(value.size())}});
            // The three fields that frame the body (names of different lengths: cheap to tell
            // apart).
            if (name.size() == 14 && field_name_is(name, "content-length")) {
                std::uint64_t n = 0;
                if (!parse_length(value, n) || (f.has_length && n != f.length))
                    return false; // malformed, or two different lengths: no telling which is true
                f.has_length = true;
                f.length = n;
            } else if (name.size() == 17 && field_name_is(name, "transfer-encoding")) {
                if (!coding_list(value)) {
                    bad_list = true;
                    return false;
                }
                f.has_te = true;
                bool twice = false;
                for_each_item(value, [&](std::string_view coding) {
                    // The coding's name, without parameters (as Beast reads it).
                    twice = twice || chunked_seen; // a coding after chunked, chunked included
                    f.chunked_last = iequals(trim(coding.substr(0, coding.find(';'))), "chunked");
                    chunked_seen = chunked_seen || f.chunked_last;
                });
                if (twice) { // chunked is applied once, and last (RFC 9112 6.1), as Beast reads
                    bad_list = true;
                    return false;
                }
            } else if (name.size() == 10 && field_name_is(name, "connection")) {
                if (!token_list(value)) {
                    bad_list = true;
                    return false;
                }
                for_each_item(value, [&](std::string_view option) {
                    const bool close = iequals(option, "close");
                    const bool keep = iequals(option, "keep-alive");
                    f.close = f.close || close;
                    f.keep = f.keep || keep;
                    connection_names_fields_ = connection_names_fields_ || (!close && !keep);
                });
            }
            return true;
        });
    if (fields != fields_end::blank_line) {
        ec = fields == fields_end::bad_name                ? errc::error::bad_field
             : fields == fields_end::bad_value || bad_list ? errc::error::bad_value
                                                           : errc::error::bad_content_length;
        return 0;
    }

    if (f.has_length && f.has_te) {
        // Both frame the body: an answer that could be read two ways (RFC 9112 6.3 says to
        // drop the connection), refused as Beast refuses it.
        ec = errc::error::bad_content_length;
        return 0;
    }
    decide_framing(f, head_request);
    return total;
}

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
