// Rendezvous (highest-random-weight) hashing, Thaler & Ravishankar 1996: each replica's weight for
// a key is XXH3-64 over the key's bytes followed by the replica id's bytes; the replica with the
// highest weight owns the key. It needs no shared state, so independent routers agree, and a
// replica joining or leaving moves only the keys it wins or owned. Used by session (key = session
// key) and by prefix/kv_aware (key = hash of the first blocks) together with the bounded-load cap
// of load.hpp. No knobs.
#pragma once

#include "router/policies/policy.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::router {

std::uint64_t rendezvous_weight(std::string_view key, std::string_view replica_id);

// True when replica `a` ranks above replica `b` for `key` (weight, then id, so ties are stable).
bool rendezvous_before(std::string_view key, const replica_view& a, const replica_view& b);

// rendezvous_before over many comparisons with one key: each candidate's weight is computed once.
class rendezvous_order {
public:
    rendezvous_order(std::string_view key, const pool_snapshot& pool,
                     std::span<const std::size_t> candidates);
    // rendezvous_before(key, pool.replicas[a], pool.replicas[b]) for two of the candidates.
    bool before(std::size_t a, std::size_t b) const {
        return weight_[a] != weight_[b] ? weight_[a] > weight_[b]
                                        : pool_.replicas[a].id < pool_.replicas[b].id;
    }

private:
    const pool_snapshot& pool_;
    std::vector<std::uint64_t> weight_; // by index into pool.replicas
};

// The rendezvous key of a request's prefix: the 8 little-endian bytes of block
// min(prefix_blocks, blocks.size()) - 1, whose chained hash covers the whole prefix up to it.
// prefix_blocks 0 counts as 1; an empty request gives an empty key.
std::string prefix_key(std::span<const common::block_hash> blocks, std::size_t prefix_blocks);

// The highest-ranked candidate (index into pool.replicas) whose inflight + 1 <= cap; when every
// candidate is over the cap, the highest-ranked one. Empty when there are no candidates.
std::optional<std::size_t> rendezvous_bounded(std::string_view key, const pool_snapshot& pool,
                                              std::span<const std::size_t> candidates,
                                              std::int64_t cap);

} // namespace lanes::router
