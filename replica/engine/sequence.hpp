// One request as the engine sees it: its tokens (prompt, then generated), how many of them have
// K/V in the cache, its block table and block hashes, and what the engine needs to finish it.
#pragma once

#include "common/prompt/block_hash.hpp"
#include "common/prompt/tokenizer.hpp"
#include "replica/engine/block_manager.hpp"

#include <chrono>
#include <cstdint>
#include <vector>

namespace lanes::replica {

struct sequence {
    std::uint64_t id = 0;
    std::vector<common::token_id> tokens; // prompt + generated
    std::size_t num_prompt = 0;
    std::size_t num_computed = 0;           // leading tokens whose K/V is in the cache
    std::vector<block_id> blocks;           // block table
    std::vector<common::block_hash> hashes; // hashes of the full blocks of `tokens`
    // Block 0's parent: root_block_hash, or the request's cache_salt hashed (salted_root).
    common::block_hash hash_root = common::root_block_hash;
    std::size_t num_registered = 0; // leading blocks offered to the prefix cache
    bool admitted_before = false;   // counted in the prefix-cache metrics already
    std::size_t cached_tokens = 0;  // prefix-cache hit at first admission

    std::size_t num_generated() const { return tokens.size() - num_prompt; }
    std::size_t uncomputed() const { return tokens.size() - num_computed; }
};

} // namespace lanes::replica
