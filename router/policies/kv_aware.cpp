#include "router/policies/kv_aware.hpp"

#include "router/policies/factory.hpp"
#include "router/policies/rendezvous.hpp"

#include <algorithm>
#include <optional>

namespace lanes::router {

kv_aware_policy::kv_aware_policy(const policy_options& options)
    : index_(options.index)
    , precise_(options.precise)
    , clock_(options.clock)
    , overlap_weight_(options.kv_aware.overlap_weight)
    , hash_prefix_blocks_(options.index.hash_prefix_blocks) {}
namespace {

// Active KV blocks: measured when the replica reports both usage and capacity, else estimated as
// each inflight request holding as many blocks as this one.
// The larger of the two: a scrape (every 100 ms) lags a burst of requests the router has just
// sent, and the router's own count would miss what other routers sent.
double decode_load(const replica_view& r, std::size_t request_blocks) {
    const double estimate = static_cast<double>(r.inflight) * static_cast<double>(request_blocks);
    if (r.kv_usage && r.num_blocks)
        return std::max(*r.kv_usage * static_cast<double>(*r.num_blocks), estimate);
    return estimate;
}

} // namespace

std::size_t kv_aware_policy::on_routed(const route_request& req, const std::string& replica_id) {
    if (precise_)
        precise_->expect(replica_id, req.blocks, clock_());
    return index_.insert(replica_id, req.blocks).held; // pending until on_outcome
}

void kv_aware_policy::on_outcome(const route_request& req, const std::string& replica_id,
                                 std::size_t recorded, bool ok) {
    index_.settle(replica_id, req.blocks, recorded, ok);
}

void kv_aware_policy::on_replicas_changed(const pool_snapshot& pool) {
    index_.retain(pool);
    index_.update_capacities(pool);
}

decision kv_aware_policy::choose(const route_request& req, const pool_snapshot& pool,
                                 const exclusion& out) const {
    const std::vector<std::size_t> candidates = eligible_indices(pool, req, out.tried, out.full);
    if (candidates.empty())
        return {std::nullopt, route_reason::kv_cost, 0};
    const std::string key = prefix_key(req.blocks, hash_prefix_blocks_);
    const rendezvous_order order(key, pool, candidates);
    const std::size_t n = req.blocks.size();

    struct scored {
        std::size_t index;
        double cost;
        std::size_t matched;
    };
    const auto better = [&](const scored& a, const std::optional<scored>& b) {
        if (!b)
            return true;
        if (a.cost != b->cost)
            return a.cost < b->cost;
        const replica_view& ra = pool.replicas[a.index];
        const replica_view& rb = pool.replicas[b->index];
        if (ra.inflight != rb.inflight)
            return ra.inflight < rb.inflight;
        return order.before(a.index, b->index);
    };
    std::optional<scored> best;
    // The precise index read under one lock for the whole decision, the clock read once.
    std::optional<precise_index::reading> reading;
    if (precise_)
        reading.emplace(*precise_);
    std::optional<std::chrono::steady_clock::time_point> now;
    for (const std::size_t i : candidates) {
        const replica_view& r = pool.replicas[i];
        const std::string& id = pool.replicas[i].id;
        const bool precise = reading && reading->live(id, pool.replicas[i].epoch);
        if (precise && !now)
            now = clock_();
        const std::size_t matched =
            precise ? reading->match(id, req.blocks, *now) : index_.match_at(i, req.blocks);
        const double cost = overlap_weight_ * static_cast<double>(n - matched) + decode_load(r, n);
        const scored s{i, cost, matched};
        if (better(s, best))
            best = s;
    }
    return {best->index, route_reason::kv_cost, best->matched};
}

} // namespace lanes::router
