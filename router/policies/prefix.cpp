#include "router/policies/prefix.hpp"

#include "router/policies/factory.hpp"

#include "router/policies/load.hpp"
#include "router/policies/rendezvous.hpp"

#include <algorithm>
#include <cmath>
#include <optional>

namespace lanes::router {

prefix_policy::prefix_policy(const policy_options& options)
    : fallback_(options)
    , index_(options.index)
    , precise_(options.precise)
    , clock_(options.clock)
    , kv_weight_(options.load.kv_weight)
    , load_factor_(options.prefix.load_factor)
    , long_match_load_factor_(options.prefix.long_match_load_factor)
    , cap_floor_(options.load.cap_floor)
    , balance_abs_(options.prefix.balance_abs_threshold)
    , balance_rel_(options.prefix.balance_rel_threshold)
    , min_match_ratio_(options.prefix.min_match_ratio)
    , miss_prefill_weight_(options.prefix.miss_prefill_weight)
    , match_prefill_blocks_(options.prefix.match_prefill_blocks)
    , hash_prefix_blocks_(options.index.hash_prefix_blocks) {}

std::size_t prefix_policy::on_routed(const route_request& req, const std::string& replica_id) {
    const auto [held, recorded] = index_.insert(replica_id, req.blocks); // pending until on_outcome
    // Expected until its events confirm them: what the index records (so a prompt no replica can
    // hold leaves nothing to expire, however many blocks it has).
    if (precise_)
        precise_->expect(replica_id, req.blocks.first(recorded), clock_());
    prefilling_[replica_id] += static_cast<std::int64_t>(req.blocks.size() - held);
    fallback_.on_routed(req, replica_id); // its draws move on, whoever chose
    return held;
}

void prefix_policy::on_first_byte(const route_request& req, const std::string& replica_id,
                                  std::size_t recorded) {
    const auto it = prefilling_.find(replica_id);
    if (it == prefilling_.end())
        return;
    const auto uncached = req.blocks.size() - std::min(recorded, req.blocks.size());
    it->second = std::max<std::int64_t>(0, it->second - static_cast<std::int64_t>(uncached));
}

std::int64_t prefix_policy::prefilling_at(const pool_snapshot& pool, std::size_t i) const {
    const auto it = prefilling_.find(pool.replicas[i].id);
    return it == prefilling_.end() ? 0 : it->second;
}

std::size_t prefix_policy::matched(const pool_snapshot& pool, std::size_t i,
                                   std::span<const common::block_hash> blocks) const {
    if (precise_at(pool, i)) {
        // A replica that still holds the head of a prefix and is where the prefix has been going
        // (the approximate index) counts as its home in full: its evicted tail is recomputed
        // there, rather than the prefix moving to a fuller copy elsewhere.
        const std::size_t held =
            precise_reading().match(pool.replicas[i].id, blocks, decision_now());
        return held > 0 ? std::max(held, index_.match_at(i, blocks)) : 0;
    }
    return index_.match_at(i, blocks);
}

void prefix_policy::on_outcome(const route_request& req, const std::string& replica_id,
                               std::size_t recorded, bool ok) {
    index_.settle(replica_id, req.blocks, recorded, ok);
}

void prefix_policy::on_replicas_changed(const pool_snapshot& pool) {
    std::erase_if(prefilling_, [&](const auto& e) {
        return std::none_of(pool.replicas.begin(), pool.replicas.end(),
                            [&](const replica_view& r) { return r.id == e.first; });
    });
    index_.retain(pool);
    index_.update_capacities(pool);
}

bool prefix_policy::imbalanced(const pool_snapshot& pool,
                               const std::vector<std::size_t>& candidates) const {
    const auto [lo, hi] = std::minmax_element(candidates.begin(), candidates.end(),
                                              [&](std::size_t a, std::size_t b) {
                                                  return load_score(pool.replicas[a], kv_weight_) <
                                                         load_score(pool.replicas[b], kv_weight_);
                                              });
    const double min_load = load_score(pool.replicas[*lo], kv_weight_);
    const double max_load = load_score(pool.replicas[*hi], kv_weight_);
    return max_load - min_load > balance_abs_ && max_load > balance_rel_ * min_load;
}

decision prefix_policy::delegate(const route_request& req, const pool_snapshot& pool,
                                 const exclusion& out, route_reason reason) const {
    decision d = fallback_.pick(req, pool, out.tried, out.full);
    d.reason = reason;
    d.matched_blocks = d.replica ? matched(pool, *d.replica, req.blocks) : 0;
    return d;
}

decision prefix_policy::by_hash(const route_request& req, const pool_snapshot& pool,
                                const std::vector<std::size_t>& candidates) const {
    const std::string key = prefix_key(req.blocks, hash_prefix_blocks_);
    const std::int64_t cap = load_cap(pool, candidates, load_factor_, cap_floor_);
    return {rendezvous_bounded(key, pool, candidates, cap), route_reason::prefix_hash, 0};
}

decision prefix_policy::spread_by_hash(const route_request& req, const pool_snapshot& pool,
                                       const std::vector<std::size_t>& candidates) const {
    const std::string key = prefix_key(req.blocks, hash_prefix_blocks_);
    const rendezvous_order order(key, pool, candidates);
    std::vector<std::size_t> ranked = candidates;
    std::sort(ranked.begin(), ranked.end(),
              [&](std::size_t a, std::size_t b) { return order.before(a, b); });
    const std::int64_t cap = load_cap(pool, candidates, load_factor_, cap_floor_);
    const bool any_within = std::any_of(candidates.begin(), candidates.end(), [&](std::size_t i) {
        return within_cap(pool.replicas[i], cap);
    });
    // Fill as a share of each index's capacity; the slack is this request's share.
    const auto fill = [&](std::size_t i) {
        return static_cast<double>(index_.size_at(i)) /
               static_cast<double>(std::max<std::size_t>(index_.capacity_at(i), 1));
    };
    double mean = 0;
    for (const std::size_t i : candidates)
        mean += fill(i);
    mean /= static_cast<double>(candidates.size());
    for (const std::size_t i : ranked) {
        if (any_within && !within_cap(pool.replicas[i], cap))
            continue;
        const double slack = static_cast<double>(req.blocks.size()) /
                             static_cast<double>(std::max<std::size_t>(index_.capacity_at(i), 1));
        if (fill(i) <= mean + slack)
            return {i, route_reason::prefix_hash, 0};
    }
    return least_cached(req, pool, candidates);
}

double prefix_policy::busy(const pool_snapshot& pool, std::size_t i, double per_block) const {
    const double load = load_score(pool.replicas[i], kv_weight_);
    if (per_block == 0)
        return load;
    // Whole requests' worth only: less than one leaves the tie to the next rule.
    return load + std::floor(per_block * static_cast<double>(prefilling_at(pool, i)));
}

// A new prefix goes to the replica whose index is least full, among those within the load cap
// (SGLang's original "smallest tree"): new prefixes spread evenly, so that the requests that
// later share them do too, where the load of the moment would place them by its noise. Ties
// (indexes at their capacity, or empty) go to the least busy replica, then rendezvous order.
decision prefix_policy::least_cached(const route_request& req, const pool_snapshot& pool,
                                     const std::vector<std::size_t>& candidates) const {
    const std::string key = prefix_key(req.blocks, hash_prefix_blocks_);
    const rendezvous_order order(key, pool, candidates);
    const std::int64_t cap = load_cap(pool, candidates, load_factor_, cap_floor_);
    const bool any_within = std::any_of(candidates.begin(), candidates.end(), [&](std::size_t i) {
        return within_cap(pool.replicas[i], cap);
    });
    // The prefill pending there (uncached prompt blocks routed whose answer has not begun), in
    // units of this request's blocks, times miss_prefill_weight: a new prefix waits behind the
    // prompts ahead of it, which the count of requests does not tell apart.
    const double per_block =
        miss_prefill_weight_ / static_cast<double>(std::max<std::size_t>(req.blocks.size(), 1));
    std::optional<std::size_t> best;
    double best_busy = 0;
    for (const std::size_t i : candidates) {
        if (any_within && !within_cap(pool.replicas[i], cap))
            continue;
        const double bi = busy(pool, i, per_block);
        if (best) {
            // Fill is size / capacity, compared without division.
            const std::size_t fi =
                index_.size_at(i) * std::max<std::size_t>(index_.capacity_at(*best), 1);
            const std::size_t fb =
                index_.size_at(*best) * std::max<std::size_t>(index_.capacity_at(i), 1);
            if (fi > fb ||
                (fi == fb && (bi > best_busy || (bi == best_busy && !order.before(i, *best)))))
                continue;
        }
        best = i;
        best_busy = bi;
    }
    return {*best, route_reason::prefix_miss, matched(pool, *best, req.blocks)};
}

decision prefix_policy::choose(const route_request& req, const pool_snapshot& pool,
                               const exclusion& out) const {
    struct release { // the index's lock goes before anything on this thread may write to it
        decision_reading& r;
        ~release() { r.clear(); }
    } scope{reading_};
    reading_.clear();
    return choose_within(req, pool, out);
}

decision prefix_policy::choose_within(const route_request& req, const pool_snapshot& pool,
                                      const exclusion& out) const {
    const std::vector<std::size_t> candidates = eligible_indices(pool, req, out.tried, out.full);
    if (candidates.empty())
        return {std::nullopt, route_reason::prefix_miss, 0};
    if (imbalanced(pool, candidates))
        return delegate(req, pool, out, route_reason::prefix_imbalance);
    if (req.blocks.empty())
        return delegate(req, pool, out, route_reason::prefix_miss);
    // Nothing cached anywhere, by the replicas' word or this router's own routing (a fresh
    // router in front of fresh replicas): rendezvous hashing, so that independent routers agree.
    if (std::all_of(candidates.begin(), candidates.end(), [&](std::size_t i) {
            return index_.size_at(i) == 0 &&
                   (!precise_at(pool, i) || precise_reading().size(pool.replicas[i].id) == 0);
        }))
        return by_hash(req, pool, candidates);

    // The replicas' own word first, where they publish it: a prefix one of them holds now. When
    // none does (evicted everywhere, or never seen), the approximate index's memory of where
    // the prefix went decides, as without events: sending it back there keeps one home per
    // prefix instead of scattering copies over the fleet.
    const bool any_precise = std::any_of(candidates.begin(), candidates.end(),
                                         [&](std::size_t i) { return precise_at(pool, i); });
    if (any_precise)
        if (auto d = longest(req, pool, out, candidates, true))
            return *d;
    if (auto d = longest(req, pool, out, candidates, false))
        return *d;
    // A new prefix while the replicas' events still report nothing, though this router has
    // routed (clients starting at once, before the first step's events): in rendezvous order, so
    // that other routers mostly agree, but not onto a replica already a request's worth fuller
    // than the mean (plain hashing until the first events piled 11 of 32 prefixes on one).
    if (std::all_of(candidates.begin(), candidates.end(), [&](std::size_t i) {
            return precise_at(pool, i) && precise_reading().size(pool.replicas[i].id) == 0;
        }))
        return spread_by_hash(req, pool, candidates);
    return least_cached(req, pool, candidates);
}

std::optional<decision> prefix_policy::longest(const route_request& req, const pool_snapshot& pool,
                                               const exclusion& out,
                                               const std::vector<std::size_t>& candidates,
                                               bool precise) const {
    const std::string key = prefix_key(req.blocks, hash_prefix_blocks_);
    const rendezvous_order order(key, pool, candidates);
    // Longer match first, then the lower load with pending prefill, then rendezvous order.
    const double per_block =
        match_prefill_blocks_ > 0 ? 1.0 / static_cast<double>(match_prefill_blocks_) : 0.0;
    const auto better = [&](const candidate& a, const std::optional<candidate>& b) {
        if (!b)
            return true;
        if (a.matched != b->matched)
            return a.matched > b->matched;
        if (a.load != b->load)
            return a.load < b->load;
        return order.before(a.index, b->index);
    };
    const std::int64_t cap = load_cap(pool, candidates, load_factor_, cap_floor_);
    std::optional<candidate> best;
    std::optional<candidate> best_within; // the best among replicas within the load cap
    for (const std::size_t i : candidates) {
        const replica_view& r = pool.replicas[i];
        const std::size_t m =
            precise ? matched(pool, i, req.blocks) : index_.match_at(i, req.blocks);
        const candidate c{i, busy(pool, i, per_block), m};
        if (better(c, best))
            best = c;
        if (within_cap(r, cap) && better(c, best_within))
            best_within = c;
    }
    const double ratio =
        static_cast<double>(best->matched) / static_cast<double>(req.blocks.size());
    if (best->matched == 0 || ratio < min_match_ratio_)
        return std::nullopt;
    // Leaving the best match's replica: the cap grows with the share of the prompt it holds.
    const std::int64_t home_cap =
        load_cap(pool, candidates, load_factor_ + long_match_load_factor_ * ratio, cap_floor_);
    if (within_cap(pool.replicas[best->index], home_cap))
        return decision{best->index,
                        precise && precise_at(pool, best->index)
                            ? route_reason::prefix_match_precise
                            : route_reason::prefix_match,
                        best->matched};
    if (best_within)
        return decision{best_within->index, route_reason::prefix_overload, best_within->matched};
    return delegate(req, pool, out, route_reason::prefix_overload);
}

} // namespace lanes::router
