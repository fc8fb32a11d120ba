#include "router/index/prefix_index.hpp"

#include <algorithm>

namespace lanes::router {

block_lru& prefix_index::replica_set(const std::string& replica) {
    return replicas_.try_emplace(replica, default_capacity_).first->second;
}

std::size_t prefix_index::recordable(std::size_t capacity, std::size_t blocks,
                                     std::size_t held) const {
    if (blocks > capacity)
        return held; // cannot be held there whole: only what it matched is touched
    const auto most = static_cast<std::size_t>(static_cast<double>(capacity) * max_request_share_);
    return std::max(held, std::min(blocks, most));
}

prefix_index::insertion prefix_index::insert(const std::string& replica,
                                             std::span<const common::block_hash> blocks) {
    // The head of the prefix ends up the most recently used.
    block_lru& set = replica_set(replica);
    const std::size_t held = longest_run(set, blocks);
    const std::size_t recorded = recordable(set.capacity(), blocks.size(), held);
    set.touch_in_order(blocks.first(recorded));
    return {held, recorded};
}

void prefix_index::settle(const std::string& replica, std::span<const common::block_hash> blocks,
                          std::size_t held, bool ok) {
    if (ok || held >= blocks.size())
        return;
    const auto it = replicas_.find(replica);
    if (it == replicas_.end())
        return;
    const std::size_t added = recordable(it->second.capacity(), blocks.size(), held);
    if (added > held)
        erase(replica, blocks.subspan(held, added - held));
}

void prefix_index::erase(const std::string& replica, std::span<const common::block_hash> blocks) {
    const auto it = replicas_.find(replica);
    if (it == replicas_.end())
        return;
    for (const auto h : blocks.first(std::min(blocks.size(), it->second.capacity())))
        it->second.erase(h);
}

std::size_t prefix_index::match(const std::string& replica,
                                std::span<const common::block_hash> blocks) const {
    const auto it = replicas_.find(replica);
    return it == replicas_.end() ? 0 : longest_run(it->second, blocks);
}

std::size_t prefix_index::longest_run(const block_lru& set,
                                      std::span<const common::block_hash> blocks) {
    // Blocks are chained, and insert() touches a request's blocks from its last to its first, so
    // in every chain a block is more recently used than all blocks after it: eviction takes a
    // chain's tail first and the held blocks form a prefix-closed set. The leading run held is
    // then found by binary search. Most replicas share not even the first block with a request,
    // and a full hit is common: each of those costs one or two lookups.
    if (blocks.empty() || !set.contains(blocks.front()))
        return 0;
    std::size_t lo = 1, hi = blocks.size(); // blocks[0, lo) held; blocks[hi] (if any) not held
    if (set.contains(blocks.back()))
        return hi;
    while (lo < hi) {
        const std::size_t mid = lo + (hi - lo) / 2;
        if (set.contains(blocks[mid]))
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

void prefix_index::update_capacities(const pool_snapshot& pool) {
    const bool same =
        bound_ids_.size() == pool.replicas.size() &&
        std::equal(bound_ids_.begin(), bound_ids_.end(), pool.replicas.begin(),
                   [](const std::string& id, const replica_view& r) { return id == r.id; });
    if (!same) {
        bound_ids_.clear();
        bound_.clear();
        bound_epochs_.clear();
        for (const replica_view& r : pool.replicas) {
            bound_ids_.push_back(r.id);
            bound_.push_back(&replica_set(r.id));
            bound_epochs_.push_back(&epochs_[r.id]);
        }
    }
    for (std::size_t i = 0; i < pool.replicas.size(); ++i) {
        const replica_view& r = pool.replicas[i];
        const std::size_t capacity =
            r.num_blocks && *r.num_blocks > 0
                ? static_cast<std::size_t>(static_cast<double>(*r.num_blocks) * capacity_factor_)
                : default_capacity_;
        if (*bound_epochs_[i] != r.epoch) { // its cache is gone: so is what we knew of it
            *bound_[i] = block_lru(capacity);
            *bound_epochs_[i] = r.epoch;
        }
        if (bound_[i]->capacity() != capacity)
            bound_[i]->set_capacity(capacity);
    }
}

void prefix_index::unbind() {
    bound_ids_.clear();
    bound_.clear();
    bound_epochs_.clear();
}

void prefix_index::retain(const pool_snapshot& pool) {
    unbind();
    const auto gone = [&pool](const auto& kv) {
        return std::none_of(pool.replicas.begin(), pool.replicas.end(),
                            [&kv](const replica_view& r) { return r.id == kv.first; });
    };
    std::erase_if(replicas_, gone);
    std::erase_if(epochs_, gone);
}

void prefix_index::forget(const std::string& replica) {
    unbind();
    replicas_.erase(replica);
    epochs_.erase(replica);
}

std::size_t prefix_index::size(const std::string& replica) const {
    const auto it = replicas_.find(replica);
    return it == replicas_.end() ? 0 : it->second.size();
}

std::size_t prefix_index::capacity(const std::string& replica) const {
    const auto it = replicas_.find(replica);
    return it == replicas_.end() ? default_capacity_ : it->second.capacity();
}

bool prefix_index::empty() const {
    return std::all_of(replicas_.begin(), replicas_.end(),
                       [](const auto& kv) { return kv.second.size() == 0; });
}

} // namespace lanes::router
