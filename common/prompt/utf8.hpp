// UTF-8 helpers for decoding token bytes: a lossy conversion that replaces each maximal ill-formed
// subpart with U+FFFD (the Unicode-recommended practice, as Rust's String::from_utf8_lossy and so
// Hugging Face's decoders do), and the prefix of a byte run a stream may emit now.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lanes::common {

// True when bytes are well-formed UTF-8.
bool is_valid_utf8(std::string_view bytes);
// Bytes as well-formed UTF-8: each maximal ill-formed subpart becomes U+FFFD.
std::string utf8_lossy(std::string_view bytes);
// Length of the longest prefix of bytes that does not end inside a sequence that later bytes could
// still complete; what follows it (at most 3 bytes) is a stream's to hold back.
std::size_t utf8_complete_prefix(std::string_view bytes);
// Appends the UTF-8 form of a code point (at most U+10FFFF).
void append_utf8(std::string& out, char32_t cp);

} // namespace lanes::common
