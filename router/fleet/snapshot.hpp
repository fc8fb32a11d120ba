// The policy's view of the pool (pool_snapshot), kept up to date in place. The list of replicas,
// and their ids, is copied again only when the pool's membership changed; the live fields
// (health, backoff, in flight, scraped load) are read on every refresh, the scraped stats and the
// model lists only after a scrape or a models read changed them (they are copied under the
// replica's lock). Not thread-safe: its user serialises refreshes (the proxy holds its policy
// lock).
//
// Routable: admitted by the breaker (a half-open replica takes one request at a time), not
// draining, not backing off after a 429 or 503. Passive ejection is capped: among the replicas
// serving the same models, at most max_ejection_percent are kept out for failed requests; past
// that, the least recently failed stay routable. A replica whose probes fail is out regardless.
#pragma once

#include "router/fleet/replica_pool.hpp"
#include "router/routing.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

namespace lanes::router {

class snapshot_cache {
public:
    explicit snapshot_cache(const replica_pool& pool, std::int64_t max_ejection_percent = 50)
        : pool_(pool)
        , max_ejection_percent_(max_ejection_percent) {}

    // Brings the view up to date at `now`; scraped load older than `stale_after` is left out.
    // True when the membership, a replica's cache epoch or its capacity in blocks changed since
    // the last refresh (or this is the first): what policies hear through on_replicas_changed.
    bool refresh(std::chrono::steady_clock::time_point now, std::chrono::milliseconds stale_after);
    const pool_snapshot& view() const { return snap_; }
    // The replica behind view().replicas[i], and its model list as last read.
    const std::shared_ptr<replica>& replica_at(std::size_t i) const { return replicas_[i]; }
    const model_list& models_at(std::size_t i) const { return *models_[i].second; }
    // Lets go of every replica held (removed ones included), until the next refresh.
    void clear();

    // Which replicas serve `model` (all when it is empty): `serves` gets one entry per replica
    // when only some do. Once any list was read, a replica whose list never was serves nothing.
    // None: no list that was read names it.
    enum class model_serving { all, some, none };
    model_serving serving(std::string_view model, std::vector<char>& serves) const;
    // The longest a replica (of those `serves` marks, all when empty) still backs off after a
    // 429 or 503; 0 when none does.
    std::chrono::milliseconds longest_backoff(std::span<const char> serves,
                                              std::chrono::steady_clock::time_point now) const;

private:
    // Re-admits passively ejected replicas past the cap, least recently failed first.
    void cap_ejections(const std::vector<ejection>& ejections, std::int64_t ticks);

    const replica_pool& pool_;
    const std::int64_t max_ejection_percent_;
    pool_snapshot snap_;
    std::vector<std::shared_ptr<replica>> replicas_; // lines up with snap_.replicas
    std::uint64_t version_ = UINT64_MAX;             // the pool's, at the last copy of the list
    std::vector<std::pair<std::uint64_t, scraped_stats>> stats_; // each replica's, with version
    std::vector<std::pair<std::uint64_t, std::shared_ptr<const model_list>>> models_;
};

} // namespace lanes::router
