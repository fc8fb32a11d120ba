// Load arithmetic shared by the policies. The load score of a replica is
// inflight + waiting + kv_weight * kv_usage; waiting and kv_usage are absent when the last scrape
// is stale, and then only the router's own inflight count is used. The bounded-load cap is the one
// of consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam 2018), as SGLang's
// prefix_hash uses it: a replica may take one more request while
// inflight + 1 <= max(ceil(load_factor * (total inflight + 1) / eligible replicas), cap_floor),
// with the load factor of the policy that asks. The floor keeps the cap from binding at low load:
// a replica batches a few concurrent requests at no cost, while spilling a prefix to another
// replica duplicates it there and halves both caches' reach.
#pragma once

#include "router/policies/policy.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace lanes::router {

// The load arithmetic's knobs, shared by least_loaded, session, prefix and their fallbacks.
struct load_knobs {
    // A full KV cache counts like this many queued requests in the load score.
    double kv_weight = 4.0;
    // No replica counts as over a bounded-load cap below this many requests in flight: a few
    // requests batch together at no cost, where spilling a prefix copies it to a second replica.
    std::int64_t cap_floor = 8;
};

double load_score(const replica_view& r, double kv_weight);

// The bounded-load cap over the candidate replicas (indices into pool.replicas); 0 when there are
// no candidates.
std::int64_t load_cap(const pool_snapshot& pool, std::span<const std::size_t> candidates,
                      double load_factor, std::int64_t cap_floor = 0);

inline bool within_cap(const replica_view& r, std::int64_t cap) {
    return r.inflight + 1 <= cap;
}

} // namespace lanes::router
