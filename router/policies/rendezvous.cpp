#include "router/policies/rendezvous.hpp"

#include "router/policies/load.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <xxhash.h>

namespace lanes::router {

std::uint64_t rendezvous_weight(std::string_view key, std::string_view replica_id) {
    // Key and id side by side on the stack when they fit (keys are 8 bytes, ids URLs): a policy
    // weighs every replica, sometimes twice, on each decision.
    std::array<char, 256> stack;
    const std::size_t n = key.size() + replica_id.size();
    if (n <= stack.size()) {
        std::memcpy(stack.data(), key.data(), key.size());
        std::memcpy(stack.data() + key.size(), replica_id.data(), replica_id.size());
        return XXH3_64bits(stack.data(), n);
    }
    std::string bytes;
    bytes.reserve(n);
    bytes.append(key);
    bytes.append(replica_id);
    return XXH3_64bits(bytes.data(), bytes.size());
}

bool rendezvous_before(std::string_view key, const replica_view& a, const replica_view& b) {
    const std::uint64_t wa = rendezvous_weight(key, a.id);
    const std::uint64_t wb = rendezvous_weight(key, b.id);
    return wa != wb ? wa > wb : a.id < b.id;
}

rendezvous_order::rendezvous_order(std::string_view key, const pool_snapshot& pool,
                                   std::span<const std::size_t> candidates)
    : pool_(pool)
    , weight_(pool.replicas.size()) {
    for (const std::size_t i : candidates)
        weight_[i] = rendezvous_weight(key, pool.replicas[i].id);
}

std::string prefix_key(std::span<const common::block_hash> blocks, std::size_t prefix_blocks) {
    if (blocks.empty())
        return {};
    const std::size_t k = std::clamp<std::size_t>(prefix_blocks, 1, blocks.size());
    const common::block_hash h = blocks[k - 1];
    std::string key(8, '\0');
    for (std::size_t i = 0; i < 8; ++i)
        key[i] = static_cast<char>((h >> (8 * i)) & 0xff);
    return key;
}

std::optional<std::size_t> rendezvous_bounded(std::string_view key, const pool_snapshot& pool,
                                              std::span<const std::size_t> candidates,
                                              std::int64_t cap) {
    struct ranked {
        std::size_t index;
        std::uint64_t weight;
    };
    // Weight first, then id, as rendezvous_before.
    const auto above = [&pool](const ranked& a, const std::optional<ranked>& b) {
        if (!b)
            return true;
        if (a.weight != b->weight)
            return a.weight > b->weight;
        return pool.replicas[a.index].id < pool.replicas[b->index].id;
    };
    std::optional<ranked> top;
    std::optional<ranked> top_within;
    for (const std::size_t i : candidates) {
        const ranked r{i, rendezvous_weight(key, pool.replicas[i].id)};
        if (above(r, top))
            top = r;
        if (within_cap(pool.replicas[i], cap) && above(r, top_within))
            top_within = r;
    }
    if (top_within)
        return top_within->index;
    if (top)
        return top->index;
    return std::nullopt;
}

} // namespace lanes::router
