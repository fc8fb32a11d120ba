#include "router/policies/prefix_index.hpp"

#include <algorithm>

namespace lanes::router {

void prefix_index::lru_set::touch(common::block_hash h) {
    if (auto it = where.find(h); it != where.end()) {
        order.splice(order.begin(), order, it->second);
        return;
    }
    order.push_front(h);
    where.emplace(h, order.begin());
}

void prefix_index::lru_set::shrink() {
    while (order.size() > capacity) {
        where.erase(order.back());
        order.pop_back();
    }
}

prefix_index::lru_set& prefix_index::replica_set(const std::string& replica) {
    auto [it, inserted] = replicas_.try_emplace(replica);
    if (inserted)
        it->second.capacity = default_capacity_;
    return it->second;
}

void prefix_index::insert(const std::string& replica, std::span<const common::block_hash> blocks) {
    lru_set& set = replica_set(replica);
    // Only the leading `capacity` blocks can be kept; touching them last-to-first leaves the head
    // of the prefix most recently used.
    const std::size_t n = std::min(blocks.size(), set.capacity);
    for (std::size_t i = n; i-- > 0;)
        set.touch(blocks[i]);
    set.shrink();
}

std::size_t prefix_index::match(const std::string& replica,
                                std::span<const common::block_hash> blocks) const {
    const auto it = replicas_.find(replica);
    if (it == replicas_.end())
        return 0;
    // Blocks are chained, and insert() touches a request's blocks from its last to its first, so
    // in every chain a block is more recently used than all blocks after it: eviction takes a
    // chain's tail first and the held blocks form a prefix-closed set. The leading run held is
    // then found by binary search. Most replicas share not even the first block with a request,
    // and a full hit is common: each of those costs one or two lookups.
    const auto& where = it->second.where;
    if (blocks.empty() || !where.contains(blocks.front()))
        return 0;
    std::size_t lo = 1, hi = blocks.size(); // blocks[0, lo) held; blocks[hi] (if any) not held
    if (where.contains(blocks.back()))
        return hi;
    while (lo < hi) {
        const std::size_t mid = lo + (hi - lo) / 2;
        if (where.contains(blocks[mid]))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void prefix_index::update_capacities(const pool_snapshot& pool) {
    for (const replica_view& r : pool.replicas) {
        const std::size_t capacity = r.num_blocks && *r.num_blocks > 0
                                         ? static_cast<std::size_t>(*r.num_blocks)
                                         : default_capacity_;
        lru_set& set = replica_set(r.id);
        if (set.capacity != capacity) {
            set.capacity = capacity;
            set.shrink();
        }
    }
}

void prefix_index::retain(const pool_snapshot& pool) {
    std::erase_if(replicas_, [&pool](const auto& kv) {
        return std::none_of(pool.replicas.begin(), pool.replicas.end(),
                            [&kv](const replica_view& r) { return r.id == kv.first; });
    });
}

std::size_t prefix_index::size(const std::string& replica) const {
    const auto it = replicas_.find(replica);
    return it == replicas_.end() ? 0 : it->second.order.size();
}

std::size_t prefix_index::capacity(const std::string& replica) const {
    const auto it = replicas_.find(replica);
    return it == replicas_.end() ? default_capacity_ : it->second.capacity;
}

bool prefix_index::empty() const {
    return std::all_of(replicas_.begin(), replicas_.end(),
                       [](const auto& kv) { return kv.second.order.empty(); });
}

} // namespace lanes::router
