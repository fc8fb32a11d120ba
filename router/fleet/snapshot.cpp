#include "router/fleet/snapshot.hpp"

namespace lanes::router {

bool snapshot_cache::refresh(std::chrono::steady_clock::time_point now,
                             std::chrono::milliseconds stale_after) {
    // The version is read before the list: a change in between shows as a newer version next
    // time, and the list is copied again then.
    const std::uint64_t v = pool_.version();
    const bool changed = v != version_ || replicas_.size() != snap_.replicas.size() ||
                         stats_.size() != replicas_.size();
    if (changed) {
        replicas_ = pool_.all();
        snap_.replicas.assign(replicas_.size(), replica_view{});
        for (std::size_t i = 0; i < replicas_.size(); ++i)
            snap_.replicas[i].id = replicas_[i]->id();
        version_ = v;
        stats_.assign(replicas_.size(), {UINT64_MAX, scraped_stats{}});
    }
    for (std::size_t i = 0; i < replicas_.size(); ++i) {
        replica& r = *replicas_[i];
        replica_view& view = snap_.replicas[i];
        view.inflight = r.inflight.load();
        view.routable = r.health.admits(now, view.inflight) && !r.draining.load();
        auto& [seen, s] = stats_[i];
        if (const std::uint64_t latest = r.stats_version(); latest != seen) {
            s = r.stats(); // a scrape landed since (or one lands now: the next read sees it)
            seen = latest;
        }
        view.num_blocks = s.num_blocks;
        const bool fresh =
            s.at != std::chrono::steady_clock::time_point{} && now - s.at <= stale_after;
        view.kv_usage = fresh ? s.kv_usage : std::nullopt;
        view.waiting = fresh ? s.waiting : std::nullopt;
        view.running = fresh ? s.running : std::nullopt;
    }
    return changed;
}

void snapshot_cache::clear() {
    replicas_.clear();
    stats_.clear();
    snap_.replicas.clear();
    version_ = UINT64_MAX;
}

} // namespace lanes::router
