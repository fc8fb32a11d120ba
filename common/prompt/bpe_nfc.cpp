// NFC for the tokenizer's normalizer, through utf8proc (bpe_tokenizer_impl.hpp).
#include "common/prompt/bpe_tokenizer_impl.hpp"

#include <cstdint>
#include <cstdlib>

#include <utf8proc.h>

namespace lanes::common {

// NFC leaves every code point below U+0300 as it is (none of them composes or decomposes), and
// those are exactly the texts with no byte >= 0xcc.
bool may_change_under_nfc(std::string_view text) {
    for (char c : text) {
        if (static_cast<std::uint8_t>(c) >= 0xcc) {
            return true;
        }
    }
    return false;
}

std::string nfc(std::string_view text) {
    utf8proc_uint8_t* out = nullptr;
    const auto n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(text.data()),
                                static_cast<utf8proc_ssize_t>(text.size()), &out,
                                static_cast<utf8proc_option_t>(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
    if (n < 0) {
        return std::string(text); // only on invalid UTF-8, which encode repairs first
    }
    std::string result(reinterpret_cast<const char*>(out), static_cast<std::size_t>(n));
    std::free(out);
    return result;
}

// NFC(text) is the NFC of its pieces cut just before each ASCII character: an ASCII character is
// a starter (canonical reordering never moves anything across it) and the second element of no
// canonical composition (nothing before it can compose with it). So only each stretch of
// non-ASCII characters, with the ASCII character before it (which may compose with a following
// mark), goes through utf8proc; the ASCII in between is copied. Text is mostly ASCII with a few
// accents or dashes: this keeps NFC from rewriting whole runs for them.
std::string nfc_of_non_ascii(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    std::size_t i = 0;
    while (i < text.size()) {
        std::size_t high = i;
        while (high < text.size() && static_cast<std::uint8_t>(text[high]) < 0x80) {
            ++high;
        }
        if (high == text.size()) {
            out.append(text.substr(i));
            break;
        }
        const std::size_t from = high > i ? high - 1 : high; // the ASCII character before it
        out.append(text.substr(i, from - i));
        std::size_t end = high;
        while (end < text.size() && static_cast<std::uint8_t>(text[end]) >= 0x80) {
            ++end;
        }
        const std::string_view chunk = text.substr(from, end - from);
        if (may_change_under_nfc(chunk)) {
            out += nfc(chunk);
        } else {
            out.append(chunk);
        }
        i = end;
    }
    return out;
}

} // namespace lanes::common
