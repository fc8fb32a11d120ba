// Secrets compared without leaking them through timing: API keys and admin tokens are kept only
// as SHA-256 digests, and a presented one is hashed and compared in constant time.
#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>

namespace lanes::common::access {

using digest = std::array<unsigned char, 32>;

digest sha256(std::string_view text);
// Constant-time comparison of two digests.
bool same(const digest& a, const digest& b);
// The first `bytes` bytes of a digest in lowercase hex (a short, non-secret tag of a key).
std::string hex(const digest& d, std::size_t bytes = 32);
// The token of an "Authorization: Bearer <token>" value; empty when the value is not one.
std::string_view bearer_token(std::string_view authorization);
// A file holding one secret: its first line, surrounding blanks trimmed. nullopt with `why`
// set when it cannot be read or the line is empty.
std::optional<std::string> read_secret_file(const std::string& path, std::string& why);

} // namespace lanes::common::access
