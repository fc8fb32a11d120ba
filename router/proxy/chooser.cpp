#include "router/proxy/chooser.hpp"

#include "router/metrics.hpp"
#include "router/policies/factory.hpp"

#include <algorithm>
#include <cstdint>

namespace lanes::router {

using clock_type = std::chrono::steady_clock;

chooser::chooser(const proxy_config& cfg, replica_pool& pool, router_metrics& metrics,
                 std::unique_ptr<policy> routing)
    : cfg_(cfg)
    , metrics_(metrics)
    , policy_(std::move(routing))
    , forward_policy_(make_policy("least_loaded", cfg.policy_knobs))
    , snapshot_(pool, cfg.health.max_ejection_percent) {}

void chooser::refresh_snapshot(clock_type::time_point now) {
    if (snapshot_.refresh(now, cfg_.stale_after)) {
        policy_->on_replicas_changed(snapshot_.view());
        forward_policy_->on_replicas_changed(snapshot_.view());
    }
}

void chooser::count_ideal(dispatch_plan& plan) {
    if (plan.ideal_counted || !plan.by_policy)
        return;
    plan.ideal_counted = true;
    std::size_t capacity = 0; // the fleet's blocks, those of replicas that said
    for (const auto& r : snapshot_.view().replicas)
        capacity += static_cast<std::size_t>(std::max<std::int64_t>(r.num_blocks.value_or(0), 0));
    const std::size_t hit = ideal_.hit_blocks(plan.blocks, capacity);
    // The cap accounting::note_routed puts on the prediction: the prompt's last token is always
    // computed.
    const std::size_t cap = plan.rr.prompt_tokens > 0 && plan.block_tokens > 0
                                ? (plan.rr.prompt_tokens - 1) / plan.block_tokens
                                : 0;
    metrics_.ideal_hit_tokens.inc(static_cast<double>(std::min(hit, cap) * plan.block_tokens));
}

pick_result chooser::pick(dispatch_plan& plan, const tried_set& tried, clock_type::time_point now) {
    pick_result out;
    std::lock_guard lock(mutex_);
    refresh_snapshot(now);
    const pool_snapshot& snap = snapshot_.view();
    count_ideal(plan);
    // Which replicas serve the model; none that does (all lists known) makes it unknown.
    const auto serving = snapshot_.serving(plan.model, serves_);
    if (serving == snapshot_cache::model_serving::none) {
        out.unknown_model = true;
        return out;
    }
    plan.rr.serves = serving == snapshot_cache::model_serving::some ? std::span<const char>(serves_)
                                                                    : std::span<const char>();
    // A replica at its cap takes no new request (admission holds them back meanwhile).
    const tried_set full = full_replicas();
    if (plan.pinned) {
        for (std::size_t i = 0; i < snap.replicas.size(); ++i)
            if (snap.replicas[i].id == *plan.pinned && eligible(snap, i, plan.rr, tried, full))
                out.d = {i, route_reason::response_affinity, 0};
    }
    policy& by = plan.by_policy ? *policy_ : *forward_policy_;
    if (!out.d.replica)
        out.d = by.pick(plan.rr, snap, tried, full);
    if (!out.d.replica) {
        // Nothing routable: how long until a replica of the model that is backing off takes
        // requests again (the client's Retry-After then).
        out.backoff_left = snapshot_.longest_backoff(plan.rr.serves, now);
        out.unroutable = why_unroutable(plan, tried, full, now);
        return out;
    }
    out.chosen = snapshot_.replica_at(*out.d.replica);
    for (const candidate_estimate& e : out.d.estimates)
        out.weighed.push_back(
            {snap.replicas[e.replica].id, e.seconds * 1000.0, e.matched, e.queued_tokens});
    // Counted in flight under the same lock as the choice, so the next pick sees it: a
    // half-open replica's single trial, and least-loaded choices made at the same moment on
    // other threads, depend on it. The caller releases it with an inflight_guard.
    out.chosen->traffic.inflight.fetch_add(1);
    out.by = &by;
    out.recorded = by.on_routed(plan.rr, out.chosen->id());
    return out;
}

std::string chooser::why_unroutable(const dispatch_plan& plan, const tried_set& tried,
                                    const tried_set& full, clock_type::time_point now) {
    const pool_snapshot& snap = snapshot_.view();
    const auto in = [](const tried_set& set, const std::string& id) {
        return std::find(set.begin(), set.end(), id) != set.end();
    };
    std::size_t serving = 0, draining = 0, ejected = 0, backing_off = 0, capped = 0, failed = 0;
    const auto ticks = now.time_since_epoch().count();
    for (std::size_t i = 0; i < snap.replicas.size(); ++i) {
        if (!plan.rr.serves.empty() && (i >= plan.rr.serves.size() || !plan.rr.serves[i]))
            continue;
        ++serving;
        const replica& r = *snapshot_.replica_at(i);
        if (r.draining.load())
            ++draining;
        else if (r.traffic.backoff_until.load(std::memory_order_relaxed) > ticks)
            ++backing_off;
        else if (!snap.replicas[i].routable)
            ++ejected;
        else if (in(full, snap.replicas[i].id))
            ++capped;
        else if (in(tried, snap.replicas[i].id))
            ++failed;
    }
    const std::string what = plan.model.empty() ? "the request" : "model '" + plan.model + "'";
    if (snap.replicas.empty())
        return "the router has no replicas (add them with --replica, --replica-dns or the admin "
               "API)";
    if (serving == 0)
        return "no replica serves " + what + " yet";
    std::string out = "no replica can take " + what + " now: " + std::to_string(serving) +
                      (serving == 1 ? " serves it, " : " serve it, ");
    std::string causes;
    const auto add = [&causes](std::size_t n, std::string_view text) {
        if (n == 0)
            return;
        causes += (causes.empty() ? "" : ", ") + std::to_string(n) + " " + std::string(text);
    };
    add(draining, "draining");
    add(ejected, "unhealthy (ejected after failed probes or requests)");
    add(backing_off, "backing off after a 429 or 503");
    add(capped, "at the in-flight or queue cap");
    add(failed, "already tried for this request");
    return out + (causes.empty() ? "none routable" : causes);
}

bool chooser::at_cap(std::size_t i) const {
    const pool_snapshot& snap = snapshot_.view();
    if (cfg_.replica_max_inflight > 0 &&
        snapshot_.replica_at(i)->traffic.inflight.load() >= cfg_.replica_max_inflight)
        return true;
    const auto& waiting = snap.replicas[i].waiting;
    return cfg_.replica_queue_threshold > 0 && waiting && *waiting >= cfg_.replica_queue_threshold;
}

tried_set chooser::full_replicas() const {
    tried_set full;
    if (cfg_.replica_max_inflight <= 0 && cfg_.replica_queue_threshold <= 0)
        return full;
    const pool_snapshot& snap = snapshot_.view();
    for (std::size_t i = 0; i < snap.replicas.size(); ++i)
        if (at_cap(i))
            full.push_back(snap.replicas[i].id);
    return full;
}

std::size_t chooser::free_slots(const std::string& model, const std::string& replica) {
    std::lock_guard lock(mutex_);
    refresh_snapshot(clock_type::now());
    const pool_snapshot& snap = snapshot_.view();
    const auto serving = snapshot_.serving(model, serves_);
    if (serving == snapshot_cache::model_serving::none)
        return SIZE_MAX; // unknown: dispatch answers it
    route_request rr;
    rr.serves = serving == snapshot_cache::model_serving::some ? std::span<const char>(serves_)
                                                               : std::span<const char>();
    const auto free_on = [&](std::size_t i) -> std::size_t {
        if (at_cap(i))
            return 0;
        if (cfg_.replica_max_inflight <= 0)
            return SIZE_MAX;
        return static_cast<std::size_t>(cfg_.replica_max_inflight -
                                        snapshot_.replica_at(i)->traffic.inflight.load());
    };
    std::size_t free = 0;
    bool any = false;
    for (std::size_t i = 0; i < snap.replicas.size(); ++i) {
        if (!eligible(snap, i, rr, {})) // (routable: healthy, not draining, not backing off)
            continue;
        if (!replica.empty() && snap.replicas[i].id == replica)
            return free_on(i);
        any = true;
        const std::size_t f = free_on(i);
        free = f == SIZE_MAX || free == SIZE_MAX ? SIZE_MAX : free + f;
    }
    return any ? free : SIZE_MAX; // nothing routable at all: no wait helps, dispatch answers
}

std::string chooser::preferred_replica(const dispatch_plan& plan, bool with_room) {
    std::lock_guard lock(mutex_);
    refresh_snapshot(clock_type::now());
    const pool_snapshot& snap = snapshot_.view();
    const auto serving = snapshot_.serving(plan.model, serves_);
    if (serving == snapshot_cache::model_serving::none)
        return {};
    route_request rr = plan.rr;
    rr.serves = serving == snapshot_cache::model_serving::some ? std::span<const char>(serves_)
                                                               : std::span<const char>();
    const policy& by = plan.by_policy ? *policy_ : *forward_policy_;
    const decision d = by.pick(rr, snap, {}, with_room ? full_replicas() : tried_set());
    // Worth waiting for only where something is cached for the request: a matched prefix, its
    // session, or its response's state. A pick by load alone takes any replica with room.
    const bool affinity = d.matched_blocks > 0 || d.reason == route_reason::session_sticky ||
                          d.reason == route_reason::response_affinity;
    return d.replica && affinity ? snap.replicas[*d.replica].id : std::string();
}

void chooser::first_byte(const pick_result& p, const route_request& rr) {
    std::lock_guard lock(mutex_);
    p.by->on_first_byte(rr, p.chosen->id(), p.recorded);
}

void chooser::finished(const pick_result& p, const route_request& rr, bool first_byte_told,
                       bool taken) {
    std::lock_guard lock(mutex_);
    if (!first_byte_told)
        p.by->on_first_byte(rr, p.chosen->id(), p.recorded);
    p.by->on_outcome(rr, p.chosen->id(), p.recorded, taken);
    p.by->on_request_done(p.chosen->id());
}

void chooser::release_snapshot() {
    std::lock_guard lock(mutex_);
    snapshot_.clear();
}

} // namespace lanes::router
