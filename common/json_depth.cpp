#include "common/json_depth.hpp"

#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace lanes::common {

namespace {

// The first byte from `p` on that matters outside a string ('"', '[', ']', '{', '}'), or `end`.
const char* next_structural(const char* p, const char* end) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i open_a = _mm_set1_epi8('['), close_a = _mm_set1_epi8(']');
    const __m128i open_o = _mm_set1_epi8('{'), close_o = _mm_set1_epi8('}');
    while (end - p >= 16) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
        const __m128i hit = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, open_a)),
            _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, close_a), _mm_cmpeq_epi8(x, open_o)),
                         _mm_cmpeq_epi8(x, close_o)));
        if (const int mask = _mm_movemask_epi8(hit); mask != 0)
            return p + __builtin_ctz(static_cast<unsigned>(mask));
        p += 16;
    }
#endif
    for (; p < end; ++p)
        if (*p == '"' || *p == '[' || *p == ']' || *p == '{' || *p == '}')
            return p;
    return end;
}

// Past the string whose opening quote was just read: the byte after its closing quote, or `end`
// for an unterminated one. A quote is found with memchr (the C library's widest vector code, as a
// prompt's bytes are nearly all inside one long string), and is the end unless an odd run of
// backslashes right before it escapes it.
const char* past_string(const char* p, const char* end) {
    const char* const start = p;
    for (;;) {
        const auto* quote = static_cast<const char*>(std::memchr(p, '"', end - p));
        if (!quote)
            return end;
        const char* run = quote;
        while (run > start && run[-1] == '\\')
            --run;
        p = quote + 1;
        if (((quote - run) & 1) == 0)
            return p;
    }
}

} // namespace

bool nests_deeper_than(std::string_view json, std::size_t max_depth) {
    const char* p = json.data();
    const char* const end = p + json.size();
    std::size_t depth = 0;
    while ((p = next_structural(p, end)) < end) {
        const char c = *p++;
        if (c == '"') { // a string: to its closing quote, past escapes
            if ((p = past_string(p, end)) >= end)
                return false;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth)
                return true;
        } else if (depth > 0) {
            --depth;
        }
    }
    return false;
}

json_shape measure_json(std::string_view json, std::size_t max_depth, std::size_t max_values) {
    json_shape shape;
    const char* p = json.data();
    const char* const end = p + json.size();
    std::size_t depth = 0;
    bool scalar_pending = false; // a value began at this level since the last ',' or bracket
    const auto count = [&]() {
        if (++shape.values > max_values)
            shape.within = false;
    };
    for (; p < end && shape.within; ++p) {
        switch (*p) {
        case '"':
            if ((p = past_string(p + 1, end)) >= end)
                return shape;
            --p; // the loop's ++p steps past the closing quote
            scalar_pending = true;
            break;
        case '[':
        case '{':
            count();
            if (++depth > shape.depth)
                shape.depth = depth;
            if (depth > max_depth)
                shape.within = false;
            scalar_pending = false;
            break;
        case ']':
        case '}':
        case ',':
            if (scalar_pending)
                count();
            scalar_pending = false;
            if (*p != ',' && depth > 0)
                --depth;
            break;
        case ' ':
        case '\t':
        case '\n':
        case '\r':
        case ':':
            break;
        default:
            scalar_pending = true;
        }
    }
    return shape;
}

} // namespace lanes::common
