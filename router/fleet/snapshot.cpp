#include "router/fleet/snapshot.hpp"

#include <algorithm>

namespace lanes::router {

bool snapshot_cache::refresh(std::chrono::steady_clock::time_point now,
                             std::chrono::milliseconds stale_after) {
    // The version is read before the list: a change in between shows as a newer version next
    // time, and the list is copied again then.
    const std::uint64_t v = pool_.version();
    bool changed = v != version_ || replicas_.size() != snap_.replicas.size() ||
                   stats_.size() != replicas_.size();
    if (changed) {
        replicas_ = pool_.all();
        snap_.replicas.assign(replicas_.size(), replica_view{});
        for (std::size_t i = 0; i < replicas_.size(); ++i)
            snap_.replicas[i].id = replicas_[i]->id();
        version_ = v;
        stats_.assign(replicas_.size(), {UINT64_MAX, scraped_stats{}});
        models_.assign(replicas_.size(), {UINT64_MAX, nullptr});
    }
    const auto ticks = now.time_since_epoch().count();
    bool any_ejected = false;
    std::vector<ejection> ejections;
    for (std::size_t i = 0; i < replicas_.size(); ++i) {
        replica& r = *replicas_[i];
        replica_view& view = snap_.replicas[i];
        view.inflight = r.traffic.inflight.load();
        const std::uint64_t epoch = r.epoch.load(std::memory_order_relaxed);
        changed = changed || epoch != view.epoch; // its cache is gone: policies forget it
        view.epoch = epoch;
        const bool admitted = r.health.admits(now, view.inflight);
        view.routable = admitted && !r.draining.load() &&
                        r.traffic.backoff_until.load(std::memory_order_relaxed) <= ticks;
        if (!admitted) {
            if (!any_ejected)
                ejections.assign(replicas_.size(), ejection{});
            any_ejected = true;
            ejections[i] = r.health.ejection_state(now);
        }
        auto& [seen, s] = stats_[i];
        if (const std::uint64_t latest = r.stats_version(); latest != seen) {
            s = r.stats(); // a scrape landed since (or one lands now: the next read sees it)
            seen = latest;
        }
        auto& [models_seen, m] = models_[i];
        if (const std::uint64_t latest = r.models_version(); latest != models_seen || !m) {
            m = r.models();
            models_seen = latest;
        }
        changed = changed || s.num_blocks != view.num_blocks; // its index's capacity follows
        view.num_blocks = s.num_blocks;
        const bool fresh =
            s.at != std::chrono::steady_clock::time_point{} && now - s.at <= stale_after;
        view.kv_usage = fresh ? s.kv_usage : std::nullopt;
        view.waiting = fresh ? s.waiting : std::nullopt;
        view.running = fresh ? s.running : std::nullopt;
        view.prefill = fresh ? s.prefill : std::nullopt;
        view.max_num_seqs = s.max_num_seqs;
    }
    if (any_ejected)
        cap_ejections(ejections, ticks);
    return changed;
}

void snapshot_cache::cap_ejections(const std::vector<ejection>& ejections, std::int64_t ticks) {
    // Groups: replicas with the same model list. In each, the passively ejected beyond the cap
    // come back, the least recently failed first.
    std::vector<bool> grouped(replicas_.size(), false);
    for (std::size_t i = 0; i < replicas_.size(); ++i) {
        if (grouped[i])
            continue;
        const auto& ids = models_[i].second->ids;
        std::vector<std::size_t> members, passive;
        for (std::size_t j = i; j < replicas_.size(); ++j) {
            if (grouped[j] || models_[j].second->ids != ids)
                continue;
            grouped[j] = true;
            members.push_back(j);
            if (ejections[j].open && !ejections[j].by_probe && !replicas_[j]->draining.load())
                passive.push_back(j);
        }
        const auto allowed =
            static_cast<std::size_t>(static_cast<std::int64_t>(members.size()) *
                                     std::max<std::int64_t>(0, max_ejection_percent_) / 100);
        if (passive.size() <= allowed)
            continue;
        std::sort(passive.begin(), passive.end(), [&](std::size_t a, std::size_t b) {
            return ejections[a].last_failure < ejections[b].last_failure;
        });
        for (std::size_t k = 0; k < passive.size() - allowed; ++k)
            if (replicas_[passive[k]]->traffic.backoff_until.load(std::memory_order_relaxed) <=
                ticks)
                snap_.replicas[passive[k]].routable = true;
    }
}

snapshot_cache::model_serving snapshot_cache::serving(std::string_view model,
                                                      std::vector<char>& serves) const {
    if (model.empty() || replicas_.empty())
        return model_serving::all;
    serves.assign(replicas_.size(), 0);
    // Once any replica's list was read, a replica serves what its own list names, and one whose
    // list was never read serves nothing: a replica that cannot be reached does not turn a
    // misspelled model into a retryable 5xx, nor take a model's requests when the replicas known
    // to serve it are drained. (Dispatch reads every list again before it answers 404.) Before
    // any list is read (at start, or engines without /v1/models) every replica serves anything.
    bool any_list = false;
    for (std::size_t i = 0; i < replicas_.size(); ++i) {
        const model_list& m = *models_[i].second;
        any_list = any_list || (m.known && !m.ids.empty());
    }
    if (!any_list)
        return model_serving::all;
    bool all = true, any = false;
    for (std::size_t i = 0; i < replicas_.size(); ++i) {
        const model_list& m = *models_[i].second;
        serves[i] = m.known && m.serves(model) ? 1 : 0;
        all = all && serves[i];
        any = any || serves[i];
    }
    if (!any)
        return model_serving::none;
    return all ? model_serving::all : model_serving::some;
}

std::chrono::milliseconds
snapshot_cache::longest_backoff(std::span<const char> serves,
                                std::chrono::steady_clock::time_point now) const {
    const auto ticks = now.time_since_epoch().count();
    std::chrono::steady_clock::duration longest{0};
    for (std::size_t i = 0; i < replicas_.size(); ++i) {
        const auto until = replicas_[i]->traffic.backoff_until.load(std::memory_order_relaxed);
        if (until > ticks && (serves.empty() || serves[i]))
            longest = std::max(longest, std::chrono::steady_clock::duration(until - ticks));
    }
    return std::chrono::ceil<std::chrono::milliseconds>(longest);
}

void snapshot_cache::clear() {
    replicas_.clear();
    stats_.clear();
    models_.clear();
    snap_.replicas.clear();
    version_ = UINT64_MAX;
}

} // namespace lanes::router
