// session: sticky sessions by route_request::session. A new session is placed by rendezvous
// hashing of (key, replica id) over the eligible replicas, taking the highest-ranked replica
// within the bounded-load cap (load.hpp; the top-ranked one when all are over it). A known session
// stays on its replica while that replica is eligible and within the cap; otherwise it is placed
// again (a spill). Where a session's request went is remembered in on_routed, not when picked.
// Requests without a key go to least_loaded. Past the capacity the least recently used session is
// forgotten first. Knobs: session_knobs below, load_knobs' cap_floor, the seed and the clock. The
// idea is consistent hashing with bounded loads (Mirrokni et al. 2018), as SGLang's
// manual/consistent_hashing policies and Dynamo's session affinity (idle TTL) use sticky keys.
#pragma once

#include "router/policies/least_loaded.hpp"
#include "router/policies/policy.hpp"

#include <chrono>
#include <list>
#include <string>
#include <unordered_map>

namespace lanes::router {

struct session_knobs {
    // Idle time after which a session is forgotten (Dynamo's session affinity has such a TTL).
    std::chrono::milliseconds ttl = std::chrono::minutes(30);
    std::size_t capacity = 100000; // sessions remembered
    // The bounded-load cap's factor (load.hpp): a session moves off a replica holding more than
    // this times its share.
    double load_factor = 1.25;
};

class session_policy final : public policy {
public:
    explicit session_policy(const policy_options& options);
    std::string_view name() const override { return "session"; }
    std::size_t on_routed(const route_request& req, const std::string& replica_id) override;

    // Sessions remembered now (expired ones may linger until the next request is routed).
    std::size_t size() const { return sessions_.size(); }

private:
    using time_point = std::chrono::steady_clock::time_point;
    struct entry {
        std::string replica_id;
        time_point last_used;
        std::list<std::uint64_t>::iterator lru_pos; // this entry's key in lru_
    };

    decision choose(const route_request& req, const pool_snapshot& pool,
                    const exclusion& out) const override;
    void expire(time_point now);
    void remember(std::uint64_t key, const std::string& replica_id, time_point now);

    least_loaded_policy fallback_;
    clock_fn clock_;
    std::chrono::milliseconds ttl_;
    std::size_t capacity_;
    double load_factor_;
    std::int64_t cap_floor_;
    std::unordered_map<std::uint64_t, entry> sessions_; // by session_ref::key
    std::list<std::uint64_t> lru_;                      // keys, most recently used first
};

} // namespace lanes::router
