#include "common/block_hash.hpp"

#include <array>
#include <bit>
#include <cstring>

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

// Writes the hash input (parent then tokens, little-endian) into `out`, which must hold
// 8 + 4 * tokens.size() bytes; returns the number of bytes written.
std::size_t fill_input(unsigned char* out, block_hash parent, std::span<const token_id> tokens) {
    if constexpr (std::endian::native == std::endian::little) {
        // The in-memory layout already is the little-endian wire layout: copy it whole.
        std::memcpy(out, &parent, parent_bytes);
        std::memcpy(out + parent_bytes, tokens.data(), tokens.size_bytes());
        return parent_bytes + tokens.size_bytes();
    }
    put_le(out, parent, parent_bytes);
    std::size_t pos = parent_bytes;
    for (token_id t : tokens) {
        put_le(out + pos, t, 4);
        pos += 4;
    }
    return pos;
}

} // namespace

block_hash hash_block(block_hash parent, std::span<const token_id> tokens) {
    if (tokens.size() <= stack_block_tokens) {
        std::array<unsigned char, parent_bytes + 4 * stack_block_tokens> buf;
        std::size_t n = fill_input(buf.data(), parent, tokens);
        return XXH3_64bits(buf.data(), n);
    }
    std::vector<unsigned char> buf(parent_bytes + 4 * tokens.size());
    std::size_t n = fill_input(buf.data(), parent, tokens);
    return XXH3_64bits(buf.data(), n);
}

std::vector<block_hash> hash_blocks(std::span<const token_id> tokens, std::size_t block_size) {
    std::vector<block_hash> hashes;
    extend_block_hashes(hashes, tokens, block_size);
    return hashes;
}

std::vector<block_hash> hash_prompt_blocks(std::string_view text, std::size_t block_size) {
    std::vector<block_hash> hashes;
    if (block_size == 0)
        return hashes;
    const std::size_t tokens = text.size() + 1; // BOS first
    const std::size_t full = tokens / block_size;
    hashes.reserve(full);
    const auto* bytes = reinterpret_cast<const unsigned char*>(text.data());
    block_hash parent = root_block_hash;
    if constexpr (std::endian::native == std::endian::little) {
        // One reused hash input in hash_block's layout (parent, then 4-byte tokens), filled by
        // widening the prompt bytes in place: no per-block token vector and no copy.
        static_assert(parent_bytes == 2 * sizeof(std::uint32_t));
        std::vector<std::uint32_t> input(2 + block_size);
        std::uint32_t* block = input.data() + 2;
        for (std::size_t b = 0; b < full; ++b) {
            std::memcpy(input.data(), &parent, parent_bytes);
            if (b == 0) {
                block[0] = bos_token;
                for (std::size_t i = 1; i < block_size; ++i)
                    block[i] = bytes[i - 1];
            } else {
                const unsigned char* src = bytes + b * block_size - 1; // token t is text[t - 1]
                for (std::size_t i = 0; i < block_size; ++i)
                    block[i] = src[i];
            }
            parent = XXH3_64bits(input.data(), parent_bytes + 4 * block_size);
            hashes.push_back(parent);
        }
        return hashes;
    }
    std::vector<token_id> block(block_size);
    for (std::size_t b = 0; b < full; ++b) {
        for (std::size_t i = 0; i < block_size; ++i) {
            const std::size_t t = b * block_size + i; // token index; token 0 is BOS
            block[i] = t == 0 ? bos_token : static_cast<token_id>(bytes[t - 1]);
        }
        parent = hash_block(parent, block);
        hashes.push_back(parent);
    }
    return hashes;
}

void extend_block_hashes(std::vector<block_hash>& hashes, std::span<const token_id> tokens,
                         std::size_t block_size) {
    if (block_size == 0) {
        return;
    }
    std::size_t full = tokens.size() / block_size;
    if (hashes.size() >= full) {
        return;
    }
    hashes.reserve(full);
    block_hash parent = hashes.empty() ? root_block_hash : hashes.back();
    for (std::size_t i = hashes.size(); i < full; ++i) {
        parent = hash_block(parent, tokens.subspan(i * block_size, block_size));
        hashes.push_back(parent);
    }
}

} // namespace lanes::common
