#include "common/prompt/block_hash.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>

// Inlined (the header carries the whole implementation): the router hashes ~500 short inputs per
// 8k-token prompt, each dependent on the last, so call overhead counts.
#define XXH_INLINE_ALL
#include <xxhash.h>

namespace lanes::common {

namespace {

constexpr std::size_t stack_block_tokens = 256;
constexpr std::size_t parent_bytes = 8;

void put_le(unsigned char* out, std::uint64_t value, std::size_t bytes) {
    for (std::size_t i = 0; i < bytes; ++i) {
        out[i] = static_cast<unsigned char>(value >> (8 * i));
    }
}

// Ids below this are the byte tokenizer's text bytes: a block of only those is hashed in byte form.
constexpr token_id byte_form_limit = 256;

bool all_bytes(std::span<const token_id> tokens) {
    return std::all_of(tokens.begin(), tokens.end(),
                       [](token_id t) { return t < byte_form_limit; });
}

// Writes the hash input (parent, then each token as one byte or as 4 little-endian bytes) into
// `out`; returns the number of bytes written.
std::size_t fill_input(unsigned char* out, block_hash parent, std::span<const token_id> tokens,
                       bool byte_form) {
    put_le(out, parent, parent_bytes);
    std::size_t pos = parent_bytes;
    for (token_id t : tokens) {
        put_le(out + pos, t, byte_form ? 1 : 4);
        pos += byte_form ? 1 : 4;
    }
    return pos;
}

// Blocks 1..full-1 of a text prompt for a block size known at compile time: the hash input has a
// constant length, so XXH3 compiles down to its fixed-length path with no dispatch on the size.
template <std::size_t BlockSize>
void hash_text_blocks(std::string_view text, block_hash parent, std::size_t full,
                      std::vector<block_hash>& hashes) {
    static_assert(std::endian::native == std::endian::little, "the parent is copied as it lies");
    std::array<unsigned char, parent_bytes + BlockSize> input;
    for (std::size_t b = 1; b < full; ++b) {
        std::memcpy(input.data(), &parent, parent_bytes);
        std::memcpy(input.data() + parent_bytes, text.data() + b * BlockSize - 1, BlockSize);
        parent = XXH3_64bits(input.data(), input.size());
        hashes.push_back(parent);
    }
}

} // namespace

block_hash hash_block(block_hash parent, std::span<const token_id> tokens) {
    const bool byte_form = all_bytes(tokens);
    if (tokens.size() <= stack_block_tokens) {
        std::array<unsigned char, parent_bytes + 4 * stack_block_tokens> buf;
        return XXH3_64bits(buf.data(), fill_input(buf.data(), parent, tokens, byte_form));
    }
    std::vector<unsigned char> buf(parent_bytes + 4 * tokens.size());
    return XXH3_64bits(buf.data(), fill_input(buf.data(), parent, tokens, byte_form));
}

std::vector<block_hash> hash_blocks(std::span<const token_id> tokens, std::size_t block_size,
                                    block_hash root) {
    std::vector<block_hash> hashes;
    if (block_size == 0)
        return hashes;
    const std::size_t full = tokens.size() / block_size;
    hashes.reserve(full);
    block_hash parent = root;
    for (std::size_t i = 0; i < full; ++i) {
        parent = hash_block(parent, tokens.subspan(i * block_size, block_size));
        hashes.push_back(parent);
    }
    return hashes;
}

std::vector<block_hash> hash_prompt_blocks(std::string_view text, std::size_t block_size,
                                           block_hash root) {
    std::vector<block_hash> hashes;
    if (block_size == 0)
        return hashes;
    const std::size_t tokens = text.size() + 1; // BOS first
    const std::size_t full = tokens / block_size;
    hashes.reserve(full);
    if (full == 0)
        return hashes;
    // Block 0 holds the BOS (4-byte form); every later block is prompt bytes, whose byte-form
    // hash input is the parent followed by the bytes exactly as they are in the text.
    // Usual block sizes fit on the stack; larger ones take a vector.
    std::array<token_id, stack_block_tokens> first_on_stack;
    std::vector<token_id> first_on_heap;
    if (block_size > stack_block_tokens)
        first_on_heap.resize(block_size);
    const std::span<token_id> first = block_size <= stack_block_tokens
                                          ? std::span<token_id>(first_on_stack.data(), block_size)
                                          : std::span<token_id>(first_on_heap);
    first[0] = bos_token;
    for (std::size_t i = 1; i < block_size; ++i)
        first[i] = static_cast<unsigned char>(text[i - 1]);
    block_hash parent = hash_block(root, first);
    hashes.push_back(parent);
    if (block_size == default_block_size) {
        hash_text_blocks<default_block_size>(text, parent, full, hashes);
        return hashes;
    }
    std::vector<unsigned char> input(parent_bytes + block_size);
    for (std::size_t b = 1; b < full; ++b) {
        put_le(input.data(), parent, parent_bytes);
        std::memcpy(input.data() + parent_bytes, text.data() + b * block_size - 1, block_size);
        parent = XXH3_64bits(input.data(), input.size());
        hashes.push_back(parent);
    }
    return hashes;
}

void extend_block_hashes(std::vector<block_hash>& hashes, std::span<const token_id> tokens,
                         std::size_t block_size, block_hash root) {
    if (block_size == 0) {
        return;
    }
    std::size_t full = tokens.size() / block_size;
    if (hashes.size() >= full) {
        return;
    }
    hashes.reserve(full);
    block_hash parent = hashes.empty() ? root : hashes.back();
    for (std::size_t i = hashes.size(); i < full; ++i) {
        parent = hash_block(parent, tokens.subspan(i * block_size, block_size));
        hashes.push_back(parent);
    }
}

} // namespace lanes::common

namespace lanes::common {

block_hash salted_root(std::string_view salt) {
    if (salt.empty())
        return root_block_hash;
    return XXH3_64bits_withSeed(salt.data(), salt.size(), root_block_hash ^ 0x73616c74ULL);
}

} // namespace lanes::common
