#include "router/index/ideal_cache.hpp"

#include <algorithm>

namespace lanes::router {

std::size_t ideal_cache::hit_blocks(std::span<const common::block_hash> blocks,
                                    std::size_t capacity) {
    if (capacity != lru_.capacity())
        lru_.set_capacity(capacity);
    if (capacity == 0)
        return 0;
    std::size_t hit = 0;
    while (hit < blocks.size() && lru_.contains(blocks[hit]))
        ++hit;
    lru_.touch_in_order(blocks.first(std::min(blocks.size(), capacity)));
    return hit;
}

} // namespace lanes::router
