// Chained block hashing (as vLLM's automatic prefix caching): a prompt's tokens are cut into full
// blocks of `block_size`; block i's hash is XXH3-64 over the 8 little-endian bytes of block i-1's
// hash followed by the block's token ids: one byte each when every id in the block is below 256
// (the byte tokenizer's text), else 4 little-endian bytes each. Block 0's parent is
// `root_block_hash`. Equal hash => equal whole prefix (up to collisions). A trailing partial block
// is not hashed. The byte form lets the router hash a prompt's bytes where they lie, with a
// quarter of the input; the two forms cannot be confused for one block size, their input lengths
// differ.
#pragma once

#include "common/prompt/tokenizer.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

namespace lanes::common {

using block_hash = std::uint64_t;

inline constexpr block_hash root_block_hash = 0x6c616e6573000001ULL; // "lanes" + version 1
inline constexpr std::size_t default_block_size = 16;

block_hash hash_block(block_hash parent, std::span<const token_id> tokens);

// Hashes of every full block of `tokens` (tokens.size() / block_size of them); none when
// block_size is 0. `root` is block 0's parent: the replica's cache uses root_block_hash, and the
// router folds into it what must keep two requests' blocks apart (the model, a tenant's salt).
std::vector<block_hash> hash_blocks(std::span<const token_id> tokens, std::size_t block_size,
                                    block_hash root = root_block_hash);

// hash_blocks(encode_prompt(text), block_size, root) without building the token vector (the
// router's hot path): the block's token ids are written straight from the prompt bytes.
std::vector<block_hash> hash_prompt_blocks(std::string_view text, std::size_t block_size,
                                           block_hash root = root_block_hash);

// Extends `hashes` with the hashes of the full blocks of `tokens` not yet hashed (incremental:
// used as a sequence grows during decode).
void extend_block_hashes(std::vector<block_hash>& hashes, std::span<const token_id> tokens,
                         std::size_t block_size, block_hash root = root_block_hash);

// Block 0's parent for a request with vLLM's `cache_salt`: root_block_hash without one, else a
// hash of the salt, so blocks of different salts never match (in the replica's cache, and in the
// router's index, which folds the same salt into its root).
block_hash salted_root(std::string_view salt);

} // namespace lanes::common
