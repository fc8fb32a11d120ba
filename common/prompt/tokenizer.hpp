// Byte-level tokenizer shared by the router and the replica: one token per byte (ids 0..255),
// plus BOS and EOS. Because both sides use this code, the router computes exactly the token ids,
// and so the block hashes, that a lanes replica will cache.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::common {

using token_id = std::uint32_t;

inline constexpr token_id bos_token = 256;
inline constexpr token_id eos_token = 257;
inline constexpr token_id vocab_size = 258;

// Prompt text -> token ids: BOS followed by one id per byte.
std::vector<token_id> encode_prompt(std::string_view text);
// Ids -> bytes; BOS/EOS and ids outside the vocabulary are dropped.
std::string decode(std::span<const token_id> ids);
// True for ids a response may contain: printable ASCII, '\n' (and '\t').
bool is_printable(token_id id);

} // namespace lanes::common
