// The ideal the fleet's hit rate is measured against: one LRU cache as large as every replica's KV
// cache together (in the router's block units), seeing every request this router routes. No
// routing over separate caches does better on that traffic; round-robin does about 1/N of it.
// Not thread-safe: the proxy calls it under its policy lock.
#pragma once

#include "router/index/block_lru.hpp"

#include <cstddef>
#include <span>

namespace lanes::router {

class ideal_cache {
public:
    // The leading `blocks` the cache holds now; then they are its most recent. `capacity` (the
    // fleet's blocks) resizes it when it changed; 0 keeps nothing.
    std::size_t hit_blocks(std::span<const common::block_hash> blocks, std::size_t capacity);

private:
    block_lru lru_;
};

} // namespace lanes::router
