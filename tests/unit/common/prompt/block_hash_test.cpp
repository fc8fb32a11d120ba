#include "common/prompt/block_hash.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace lanes::common;

// Golden values were computed independently of this code: the exact input bytes (8-byte
// little-endian parent, then the token ids: one byte each when all are below 256, else 4-byte
// little-endian) were written to files with Python's struct.pack and hashed with the xxhash
// package's CLI: `xxhsum -H3 <file>` (xxhsum 0.8.1, which prints the canonical big-endian form,
// i.e. the 64-bit value in hex).
TEST_CASE("hash_block matches XXH3-64 golden values", "[block_hash]") {
    // struct.pack('<Q', root)
    REQUIRE(hash_block(root_block_hash, {}) == 0x79d3f4fdfc996a0eULL);
    // struct.pack('<Q', 0) + struct.pack('<I', 257) + struct.pack('<I', 0x01020304)
    std::vector<token_id> two = {257, 0x01020304};
    REQUIRE(hash_block(0, two) == 0xa1858b85aa383ad5ULL);
    // root + tokens 0..255, all below 256: the byte form, struct.pack('<Q', root) +
    // bytes(range(256)).
    std::vector<token_id> b256;
    for (token_id i = 0; i < 256; ++i) {
        b256.push_back(i);
    }
    REQUIRE(hash_block(root_block_hash, b256) == 0x1bb1240c352d6b82ULL);
    // root + tokens i % 258 for i in 0..299: a block larger than the stack buffer.
    std::vector<token_id> big;
    for (token_id i = 0; i < 300; ++i) {
        big.push_back(i % 258);
    }
    REQUIRE(hash_block(root_block_hash, big) == 0x7fbdc5603ddbf306ULL);
}

TEST_CASE("hash_blocks chains blocks from the root", "[block_hash]") {
    // encode_prompt("hello world") in blocks of 4: [BOS h e l] [l o ' ' w], partial [o r l d].
    auto hashes = hash_blocks(encode_prompt("hello world"), 4);
    REQUIRE(hashes.size() == 3);
    REQUIRE(hashes[0] == 0xfaa88d6a4c3f7e09ULL); // root + [256, 'h', 'e', 'l']
    REQUIRE(hashes[1] == 0x55edd622e97f9e3bULL); // hashes[0] + b"lo w" (byte form)
    REQUIRE(hashes[2] == hash_block(hashes[1], std::vector<token_id>{'o', 'r', 'l', 'd'}));
}

TEST_CASE("a trailing partial block is not hashed", "[block_hash]") {
    std::vector<token_id> tokens(35, 7);
    REQUIRE(hash_blocks(tokens, 16).size() == 2);
    REQUIRE(hash_blocks(std::vector<token_id>(15, 7), 16).empty());
    REQUIRE(hash_blocks({}, 16).empty());
    auto full = hash_blocks(std::vector<token_id>(32, 7), 16);
    REQUIRE(hash_blocks(tokens, 16) == full);
}

TEST_CASE("equal prefixes give equal leading hashes, and a change affects only later blocks",
          "[block_hash]") {
    auto a = encode_prompt(std::string(100, 'x') + "tail one");
    auto b = encode_prompt(std::string(100, 'x') + "other tail, longer");
    auto ha = hash_blocks(a, default_block_size);
    auto hb = hash_blocks(b, default_block_size);
    REQUIRE(ha.size() == 6);
    REQUIRE(hb.size() == 7);
    for (std::size_t i = 0; i < 6; ++i) {
        // Block 6 starts at token 96 (BOS + 95 'x'), so blocks 0..5 are all prefix.
        CHECK(ha[i] == hb[i]);
    }

    auto changed = a;
    const std::size_t k = 3;
    changed[k * default_block_size + 5] ^= 1;
    auto hc = hash_blocks(changed, default_block_size);
    REQUIRE(hc.size() == ha.size());
    for (std::size_t i = 0; i < ha.size(); ++i) {
        if (i < k) {
            CHECK(hc[i] == ha[i]);
        } else {
            CHECK(hc[i] != ha[i]);
        }
    }
}

TEST_CASE("extend_block_hashes equals hash_blocks as a sequence grows", "[block_hash]") {
    for (std::size_t block_size : {1, 3, 16, 64}) {
        std::vector<token_id> tokens = {bos_token};
        std::vector<block_hash> incremental;
        for (token_id t = 0; t < 300; ++t) {
            tokens.push_back(t % 256);
            extend_block_hashes(incremental, tokens, block_size);
            REQUIRE(incremental == hash_blocks(tokens, block_size));
        }
        // Extending when nothing new is complete is a no-op.
        auto before = incremental;
        extend_block_hashes(incremental, tokens, block_size);
        REQUIRE(incremental == before);
    }
}

TEST_CASE("extend_block_hashes adds several blocks at once", "[block_hash]") {
    auto tokens = encode_prompt(std::string(200, 'q'));
    std::vector<block_hash> hashes;
    std::span<const token_id> all(tokens);
    extend_block_hashes(hashes, all.first(20), 16);
    REQUIRE(hashes.size() == 1);
    extend_block_hashes(hashes, all, 16);
    REQUIRE(hashes == hash_blocks(tokens, 16));
}

TEST_CASE("block size changes the hashes", "[block_hash]") {
    auto tokens = encode_prompt(std::string(64, 'z'));
    auto h16 = hash_blocks(tokens, 16);
    auto h32 = hash_blocks(tokens, 32);
    REQUIRE(h16.size() == 4);
    REQUIRE(h32.size() == 2);
    REQUIRE(h16[0] != h32[0]);
    REQUIRE(h16[1] != h32[0]);
    REQUIRE(h32[0] == hash_block(root_block_hash, std::span(tokens).first(32)));
}

TEST_CASE("hash_prompt_blocks equals hashing the encoded prompt", "[block_hash]") {
    std::string text;
    for (int n = 0; n < 600; ++n) {
        for (std::size_t block : {1u, 7u, 16u, 64u, 256u, 257u}) // 257: past the stack buffer
            REQUIRE(lanes::common::hash_prompt_blocks(text, block) ==
                    lanes::common::hash_blocks(lanes::common::encode_prompt(text), block));
        text.push_back(static_cast<char>(n * 37 % 256));
    }
}
