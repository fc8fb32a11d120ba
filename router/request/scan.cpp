// read_request's first reader (request_view.hpp): a strict one-pass scanner for the common
// completions body; it needs no padded copy and no stage-one index.
#include "router/request/scan.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace lanes::router {

namespace {

// One JSON object, ASCII only, strings with the simple escapes (no \u), nesting at most
// scan_max_depth deep. Everything read is checked against the JSON grammar, skipped values
// included; what the scanner does not handle it declines, and the on-demand parser
// (request_view.cpp) takes the body.

constexpr int scan_max_depth = 32;

bool json_space(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

bool digit(char c) {
    return c >= '0' && c <= '9';
}

void skip_space(const char*& p, const char* end) {
    while (p < end && json_space(*p))
        ++p;
}

// The first byte from `p` on that ends a plain run of string text: a quote, a backslash, a
// control byte or a non-ASCII one; `end` if there is none. With SSE2, 32 bytes a step: a signed
// compare with 0x20 catches both the control bytes and the non-ASCII ones (negative as signed).
const char* string_stop(const char* p, const char* end) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    const auto stops = [&](const char* at) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(at));
        return _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, backslash)),
                            _mm_cmpgt_epi8(space, x));
    };
    while (end - p >= 32 && _mm_movemask_epi8(_mm_or_si128(stops(p), stops(p + 16))) == 0)
        p += 32;
    while (end - p >= 16) {
        const int mask = _mm_movemask_epi8(stops(p));
        if (mask != 0)
            return p + __builtin_ctz(static_cast<unsigned>(mask));
        p += 16;
    }
#endif
    for (; p < end; ++p) {
        const auto u = static_cast<unsigned char>(*p);
        if (u == '"' || u == '\\' || u < 0x20 || u >= 0x80)
            return p;
    }
    return end;
}

// A string whose opening quote is at `p`: on success `p` is past its closing quote, `raw` holds
// the text between the quotes and `escaped` says whether it has escapes.
bool scan_string(const char*& p, const char* end, std::string_view& raw, bool& escaped) {
    const char* const start = ++p;
    escaped = false;
    for (;;) {
        p = string_stop(p, end);
        if (p == end)
            return false;
        if (*p == '"')
            break;
        if (*p != '\\' || end - p < 2)
            return false; // a control byte or non-ASCII: the full parser judges it
        switch (p[1]) {
        case '"':
        case '\\':
        case '/':
        case 'b':
        case 'f':
        case 'n':
        case 'r':
        case 't':
            break;
        default:
            return false; // \u (or a bad escape)
        }
        escaped = true;
        p += 2;
    }
    raw = std::string_view(start, static_cast<std::size_t>(p - start));
    ++p;
    return true;
}

// The text of a string that scan_string() found escaped (it checked every escape).
std::string unescape(std::string_view raw) {
    std::string out;
    out.reserve(raw.size());
    for (std::size_t i = 0; i < raw.size(); ++i) {
        if (raw[i] != '\\') {
            out += raw[i];
            continue;
        }
        switch (raw[++i]) {
        case 'b':
            out += '\b';
            break;
        case 'f':
            out += '\f';
            break;
        case 'n':
            out += '\n';
            break;
        case 'r':
            out += '\r';
            break;
        case 't':
            out += '\t';
            break;
        default:
            out += raw[i];
            break; // " \ /
        }
    }
    return out;
}

// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
bool scan_number(const char*& p, const char* end) {
    if (p < end && *p == '-')
        ++p;
    if (p == end || !digit(*p))
        return false;
    if (*p++ != '0')
        while (p < end && digit(*p))
            ++p;
    if (p < end && *p == '.') {
        if (++p == end || !digit(*p))
            return false;
        while (p < end && digit(*p))
            ++p;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        if (++p < end && (*p == '+' || *p == '-'))
            ++p;
        if (p == end || !digit(*p))
            return false;
        while (p < end && digit(*p))
            ++p;
    }
    return true;
}

bool scan_literal(const char*& p, const char* end, std::string_view word) {
    if (static_cast<std::size_t>(end - p) < word.size() || std::string_view(p, word.size()) != word)
        return false;
    p += word.size();
    return true;
}

// Any JSON value at `p`, checked and passed over.
bool skip_value(const char*& p, const char* end, int depth) {
    if (p == end)
        return false;
    std::string_view raw;
    bool escaped = false;
    switch (*p) {
    case '"':
        return scan_string(p, end, raw, escaped);
    case 't':
        return scan_literal(p, end, "true");
    case 'f':
        return scan_literal(p, end, "false");
    case 'n':
        return scan_literal(p, end, "null");
    case '{':
    case '[': {
        if (depth >= scan_max_depth)
            return false;
        const bool object = *p == '{';
        const char close = object ? '}' : ']';
        ++p;
        skip_space(p, end);
        if (p < end && *p == close) {
            ++p;
            return true;
        }
        for (;;) {
            if (object) {
                if (p == end || *p != '"' || !scan_string(p, end, raw, escaped))
                    return false;
                skip_space(p, end);
                if (p == end || *p++ != ':')
                    return false;
                skip_space(p, end);
            }
            if (!skip_value(p, end, depth + 1))
                return false;
            skip_space(p, end);
            if (p == end)
                return false;
            if (*p == close) {
                ++p;
                return true;
            }
            if (*p++ != ',')
                return false;
            skip_space(p, end);
        }
    }
    default:
        return scan_number(p, end);
    }
}

// A string field or null (left unset); false for anything else.
bool scan_optional_string(const char*& p, const char* end, std::optional<std::string>& out) {
    if (p < end && *p == 'n')
        return scan_literal(p, end, "null");
    std::string_view raw;
    bool escaped = false;
    if (p == end || *p != '"' || !scan_string(p, end, raw, escaped))
        return false;
    out = escaped ? unescape(raw) : std::string(raw);
    return true;
}

} // namespace

std::optional<request_view> scan_completion_request(std::string_view body) {
    const char* p = body.data();
    const char* const end = p + body.size();
    skip_space(p, end);
    if (p == end || *p++ != '{')
        return std::nullopt;
    request_view view;
    bool have_prompt = false;
    // The fields read, each taken once: a repeat is declined, and the on-demand reader names it.
    unsigned seen = 0;
    const auto first_time = [&seen](unsigned bit) {
        const bool first = (seen & bit) == 0;
        seen |= bit;
        return first;
    };
    skip_space(p, end);
    if (p < end && *p == '}')
        return std::nullopt; // no prompt
    for (;;) {
        std::string_view key;
        bool escaped = false;
        if (p == end || *p != '"' || !scan_string(p, end, key, escaped) || escaped)
            return std::nullopt;
        skip_space(p, end);
        if (p == end || *p++ != ':')
            return std::nullopt;
        skip_space(p, end);
        bool ok = true;
        if (key == "model") {
            ok = first_time(1) && scan_optional_string(p, end, view.model);
        } else if (key == "user") {
            ok = first_time(2) && scan_optional_string(p, end, view.user);
        } else if (key == "stream") { // true, false, or null (which changes nothing)
            if (!first_time(4))
                ok = false;
            else if (scan_literal(p, end, "true"))
                view.stream = true;
            else if (scan_literal(p, end, "false"))
                view.stream = false;
            else
                ok = scan_literal(p, end, "null");
        } else if (key == "prompt") {
            std::string_view raw;
            ok = first_time(8) && p < end && *p == '"' &&
                 scan_string(p, end, raw, escaped); // arrays: declined
            if (ok) {
                have_prompt = true;
                if (escaped) {
                    view.owned = unescape(raw);
                    view.borrowed.reset();
                } else {
                    view.borrowed = raw;
                }
            }
        } else {
            ok = skip_value(p, end, 1);
        }
        if (!ok)
            return std::nullopt;
        skip_space(p, end);
        if (p == end)
            return std::nullopt;
        if (*p == '}')
            break;
        if (*p++ != ',')
            return std::nullopt;
        skip_space(p, end);
    }
    ++p;
    skip_space(p, end);
    if (p != end || !have_prompt)
        return std::nullopt;
    return view;
}

} // namespace lanes::router
