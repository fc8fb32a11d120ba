#include "router/fleet/replica_pool.hpp"

#include <algorithm>

namespace lanes::router {

replica::replica(common::http::url u, health_config health_cfg)
    : health(health_cfg)
    , url_(std::move(u))
    , authority_(url_.authority())
    , id_(url_.str()) {}

scraped_stats replica::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

void replica::set_stats(const scraped_stats& s) {
    std::lock_guard lock(mutex_);
    stats_ = s;
    stats_version_.fetch_add(1, std::memory_order_release);
}

std::unique_ptr<common::http::client_connection> replica::take_idle() {
    std::lock_guard lock(mutex_);
    while (!idle_.empty()) {
        auto conn = std::move(idle_.back());
        idle_.pop_back();
        if (conn->is_open())
            return conn;
    }
    return nullptr;
}

void replica::give_back(std::unique_ptr<common::http::client_connection> conn,
                        std::size_t max_idle) {
    std::lock_guard lock(mutex_);
    if (idle_.size() < max_idle && conn->is_open())
        idle_.push_back(std::move(conn));
}

void replica::drop_idle() {
    std::lock_guard lock(mutex_);
    idle_.clear();
}

bool replica_pool::add(const common::http::url& u, std::string source) {
    auto r = std::make_shared<replica>(u, health_cfg_);
    r->source = std::move(source);
    std::unique_lock lock(mutex_);
    for (const auto& existing : replicas_)
        if (existing->id() == r->id())
            return false;
    replicas_.push_back(std::move(r));
    version_.fetch_add(1);
    return true;
}

bool replica_pool::remove(const std::string& id) {
    std::unique_lock lock(mutex_);
    const auto before = replicas_.size();
    std::erase_if(replicas_, [&](const auto& r) { return r->id() == id; });
    if (replicas_.size() == before)
        return false;
    version_.fetch_add(1);
    return true;
}

std::shared_ptr<replica> replica_pool::find(const std::string& id) const {
    std::shared_lock lock(mutex_);
    for (const auto& r : replicas_)
        if (r->id() == id)
            return r;
    return nullptr;
}

std::vector<std::shared_ptr<replica>> replica_pool::all() const {
    std::shared_lock lock(mutex_);
    return replicas_;
}

void replica_pool::refresh(pool_snapshot& snap, std::vector<std::shared_ptr<replica>>& replicas,
                           std::uint64_t& seen_version, std::chrono::steady_clock::time_point now,
                           std::chrono::milliseconds stale_after,
                           std::vector<std::pair<std::uint64_t, scraped_stats>>& stats) const {
    // The version is read before the list: a change in between shows as a newer version next
    // time, and the list is copied again then.
    const std::uint64_t v = version();
    if (v != seen_version || replicas.size() != snap.replicas.size() ||
        stats.size() != replicas.size()) {
        replicas = all();
        snap.replicas.assign(replicas.size(), replica_view{});
        for (std::size_t i = 0; i < replicas.size(); ++i)
            snap.replicas[i].id = replicas[i]->id();
        seen_version = v;
        stats.assign(replicas.size(), {UINT64_MAX, scraped_stats{}});
    }
    for (std::size_t i = 0; i < replicas.size(); ++i) {
        replica& r = *replicas[i];
        replica_view& view = snap.replicas[i];
        view.inflight = r.inflight.load();
        view.routable = r.health.admits(now, view.inflight) && !r.draining.load();
        auto& [seen, s] = stats[i];
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
}

} // namespace lanes::router
