// The policy's view of the pool (pool_snapshot), kept up to date in place. The list of replicas,
// and their ids, is copied again only when the pool's membership changed; the live fields
// (health, in flight, scraped load) are read on every refresh, the scraped stats only after a
// scrape changed them (they are copied under the replica's lock). Not thread-safe: its user
// serialises refreshes (the proxy holds its policy lock).
#pragma once

#include "router/fleet/replica_pool.hpp"
#include "router/policies/policy.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

namespace lanes::router {

class snapshot_cache {
public:
    explicit snapshot_cache(const replica_pool& pool)
        : pool_(pool) {}

    // Brings the view up to date at `now`; scraped load older than `stale_after` is left out.
    // True when the membership changed since the last refresh (or this is the first).
    bool refresh(std::chrono::steady_clock::time_point now, std::chrono::milliseconds stale_after);
    const pool_snapshot& view() const { return snap_; }
    // The replica behind view().replicas[i].
    const std::shared_ptr<replica>& replica_at(std::size_t i) const { return replicas_[i]; }
    // Lets go of every replica held (removed ones included), until the next refresh.
    void clear();

private:
    const replica_pool& pool_;
    pool_snapshot snap_;
    std::vector<std::shared_ptr<replica>> replicas_; // lines up with snap_.replicas
    std::uint64_t version_ = UINT64_MAX;             // the pool's, at the last copy of the list
    std::vector<std::pair<std::uint64_t, scraped_stats>> stats_; // each replica's, with version
};

} // namespace lanes::router
