// The field syntax both hand-written HTTP parsers share (parse.cpp for requests,
// response_head.cpp for answers): byte classes, field values, comma lists, the field-line walk,
// Content-Length. Private to common/http.
#pragma once

#include "common/http/parse.hpp"

#include <array>
#include <cstdint>
#include <limits>
#include <string_view>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace lanes::common::http::syntax {

inline constexpr std::string_view crlf = "\r\n";

constexpr char lower(char c) {
    return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c;
}

// `a` (any case) equals `lower_b`, which is in lower case.
inline bool iequals(std::string_view a, std::string_view lower_b) {
    if (a.size() != lower_b.size())
        return false;
    for (std::size_t i = 0; i < a.size(); ++i)
        if (lower(a[i]) != lower_b[i])
            return false;
    return true;
}

inline bool digit(char c) {
    return c >= '0' && c <= '9';
}

// RFC 9110 tchar: the bytes a field name may hold.
enum : unsigned char { tchar = 1 };
inline constexpr std::array<unsigned char, 256> byte_class = [] {
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
inline bool all_tchar(std::string_view s) {
    unsigned char all = tchar;
    for (const char c : s)
        all &= byte_class[static_cast<unsigned char>(c)];
    return all & tchar;
}

// Field values (and the reason phrase): printable ASCII, obs-text and tabs only, as Beast's
// parser requires; the request fast path leaves anything else to Beast to judge. `s` may be read
// past its end up to `limit` (the end of the header it lies in): with SSE2, sixteen bytes a load,
// the bytes past `s` masked off, so a short value costs one step.
inline bool plain_value(std::string_view s, const char* limit) {
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

inline std::string_view trim(std::string_view s) {
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
inline bool token_list(std::string_view list) {
    bool ok = true;
    for_each_item(list, [&ok](std::string_view item) { ok = ok && all_tchar(item); });
    return ok;
}

// A Transfer-Encoding list: codings as plain tokens. RFC 9112 lets a coding carry parameters
// after ';', but Beast's parser reads the field as a token list and so does not see "chunked"
// after one: no engine sends them, and a field two parsers read two ways is malformed (found by
// the response fuzz target).
inline bool coding_list(std::string_view list) {
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
inline bool parse_length(std::string_view value, std::uint64_t& n) {
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

} // namespace lanes::common::http::syntax
