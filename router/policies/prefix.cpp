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
    , recompute_weight_(options.prefix.recompute_weight)
    , cap_floor_(options.load.cap_floor)
    , hash_prefix_blocks_(options.index.hash_prefix_blocks) {}

std::size_t prefix_policy::on_routed(const route_request& req, const std::string& replica_id) {
    const auto [held, recorded] = index_.insert(replica_id, req.blocks); // pending until on_outcome
    // Expected until its events confirm them: what the index records (so a prompt no replica can
    // hold leaves nothing to expire, however many blocks it has).
    if (precise_)
        precise_->expect(replica_id, req.blocks.first(recorded), clock_());
    const auto uncached = static_cast<std::int64_t>(req.blocks.size() - held);
    pending& p = prefilling_[replica_id];
    p.blocks += uncached;
    ++p.requests;
    // An average over about the last 64 requests.
    mean_uncached_blocks_ += (static_cast<double>(uncached) - mean_uncached_blocks_) / 64.0;
    fallback_.on_routed(req, replica_id); // its draws move on, whoever chose
    return held;
}

void prefix_policy::on_first_byte(const route_request& req, const std::string& replica_id,
                                  std::size_t recorded) {
    const auto it = prefilling_.find(replica_id);
    if (it == prefilling_.end())
        return;
    const auto uncached = req.blocks.size() - std::min(recorded, req.blocks.size());
    pending& p = it->second;
    p.blocks = std::max<std::int64_t>(0, p.blocks - static_cast<std::int64_t>(uncached));
    p.requests = std::max<std::int64_t>(0, p.requests - 1);
}

const prefix_policy::pending* prefix_policy::prefilling_at(const pool_snapshot& pool,
                                                           std::size_t i) const {
    const auto it = prefilling_.find(pool.replicas[i].id);
    return it == prefilling_.end() ? nullptr : &it->second;
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

std::optional<decision>
prefix_policy::spread_by_hash(const route_request& req, const pool_snapshot& pool,
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
            return decision{i, route_reason::prefix_hash, 0};
    }
    return std::nullopt;
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
    if (req.blocks.empty())
        return delegate(req, pool, out, route_reason::prefix_miss);
    // Nothing cached anywhere, by the replicas' word or this router's own routing (a fresh
    // router in front of fresh replicas): rendezvous hashing, so that independent routers agree.
    if (std::all_of(candidates.begin(), candidates.end(), [&](std::size_t i) {
            return index_.size_at(i) == 0 &&
                   (!precise_at(pool, i) || precise_reading().size(pool.replicas[i].id) == 0);
        }))
        return by_hash(req, pool, candidates);
    return by_estimate(req, pool, candidates);
}

double prefix_policy::queued_tokens(const pool_snapshot& pool, std::size_t i,
                                    double tokens_per_block) const {
    const pending* own = prefilling_at(pool, i);
    double blocks = own ? static_cast<double>(own->blocks) : 0.0;
    // The replica's queue beyond this router's requests not yet begun: other routers' work.
    if (const auto& waiting = pool.replicas[i].waiting) {
        const double others =
            static_cast<double>(*waiting) - static_cast<double>(own ? own->requests : 0);
        if (others > 0)
            blocks += others * mean_uncached_blocks_;
    }
    return blocks * tokens_per_block;
}

double prefix_policy::estimate(const replica_view& r, const prefill_cost& fleet,
                               double queued_tokens, double uncached_tokens) const {
    // Its own step cost where fitted (its batch and KV use now), the fleet's per token.
    const double per_request = r.prefill ? r.prefill->per_request_s : fleet.per_request_s;
    double seconds =
        per_request + fleet.per_token_s * (queued_tokens + recompute_weight_ * uncached_tokens);
    // Beyond its max_num_seqs (where it reports it), a request waits for a slot: one frees
    // every 1 / finish_rate seconds.
    if (r.max_num_seqs && *r.max_num_seqs > 0 && r.prefill) {
        const auto load = std::max(r.inflight, r.running.value_or(0) + r.waiting.value_or(0));
        const auto beyond = load + 1 - *r.max_num_seqs;
        if (beyond > 0)
            seconds += static_cast<double>(beyond) / std::max(r.prefill->finish_rate, 1e-3);
    }
    return seconds;
}

namespace {

// The fleet's cost model: the mean of the candidates' fits. Each replica's own per-request cost
// (its step time now) enters its estimate; the cost per token is the fleet's, as ranked by their
// own per-token fits replicas trade places on the fits' noise (docs/router.md, "The estimate").
// Before any fit, one unit per token: the tokens alone compare.
prefill_cost fleet_cost(const pool_snapshot& pool, const std::vector<std::size_t>& candidates) {
    prefill_cost cost;
    std::size_t fitted = 0;
    for (const std::size_t i : candidates)
        if (const auto& c = pool.replicas[i].prefill) {
            cost.per_request_s += c->per_request_s;
            cost.per_token_s += c->per_token_s;
            ++fitted;
        }
    if (fitted > 0) {
        cost.per_request_s /= static_cast<double>(fitted);
        cost.per_token_s /= static_cast<double>(fitted);
    }
    if (cost.per_token_s <= 0)
        cost.per_token_s = fitted > 0 ? 1e-9 : 1.0;
    return cost;
}

} // namespace

prefix_policy::holdings prefix_policy::held_by(const route_request& req, const pool_snapshot& pool,
                                               const std::vector<std::size_t>& candidates) const {
    // The replicas' events where any of them holds some of the prompt; else this router's
    // memory of where the prefix went, so that a prefix evicted everywhere returns to its home
    // rather than scattering.
    holdings h{std::vector<std::size_t>(pool.replicas.size(), 0), false, 0};
    for (const std::size_t i : candidates) {
        h.blocks[i] = matched(pool, i, req.blocks);
        h.by_events = h.by_events || h.blocks[i] > 0;
    }
    if (!h.by_events)
        for (const std::size_t i : candidates)
            h.blocks[i] = index_.match_at(i, req.blocks);
    for (const std::size_t i : candidates)
        h.longest = std::max(h.longest, h.blocks[i]);
    return h;
}

decision prefix_policy::by_estimate(const route_request& req, const pool_snapshot& pool,
                                    const std::vector<std::size_t>& candidates) const {
    const holdings held = held_by(req, pool, candidates);
    // A new prefix while the replicas' events still report nothing, though this router has
    // routed (clients starting at once, before the first step's events): in rendezvous order, so
    // that other routers mostly agree, but not onto a replica already a request's worth fuller
    // than the mean.
    if (held.longest == 0 && std::all_of(candidates.begin(), candidates.end(), [&](std::size_t i) {
            return precise_at(pool, i) && precise_reading().size(pool.replicas[i].id) == 0;
        }))
        if (auto d = spread_by_hash(req, pool, candidates))
            return *d;
    const prefill_cost cost = fleet_cost(pool, candidates);
    const double tokens_per_block =
        static_cast<double>(std::max<std::size_t>(req.prompt_tokens, 1)) /
        static_cast<double>(req.blocks.size());
    const std::int64_t cap = load_cap(pool, candidates, load_factor_, cap_floor_);
    const bool any_within = std::any_of(candidates.begin(), candidates.end(), [&](std::size_t i) {
        return within_cap(pool.replicas[i], cap);
    });
    const rendezvous_order order(prefix_key(req.blocks, hash_prefix_blocks_), pool, candidates);
    std::vector<candidate_estimate> estimates;
    estimates.reserve(candidates.size());
    const candidate_estimate* best = nullptr;
    for (const std::size_t i : candidates) {
        const double queued = queued_tokens(pool, i, tokens_per_block);
        const double uncached =
            static_cast<double>(req.blocks.size() - std::min(held.blocks[i], req.blocks.size())) *
            tokens_per_block;
        estimates.push_back(
            {i, held.blocks[i], queued, estimate(pool.replicas[i], cost, queued, uncached)});
    }
    for (const candidate_estimate& e : estimates)
        if ((!any_within || within_cap(pool.replicas[e.replica], cap)) &&
            (!best || ranks_before(e, *best, pool, held.longest == 0, order)))
            best = &e;
    const std::size_t chosen = best->replica;
    route_reason reason = route_reason::prefix_miss;
    if (held.longest > 0)
        reason = held.blocks[chosen] < held.longest           ? route_reason::prefix_overload
                 : precise_at(pool, chosen) && held.by_events ? route_reason::prefix_match_precise
                                                              : route_reason::prefix_match;
    return {chosen, reason, held.blocks[chosen], std::move(estimates)};
}

bool prefix_policy::ranks_before(const candidate_estimate& a, const candidate_estimate& b,
                                 const pool_snapshot& pool, bool new_prefix,
                                 const rendezvous_order& order) const {
    const auto fill = [&](std::size_t i) {
        return static_cast<double>(index_.size_at(i)) /
               static_cast<double>(std::max<std::size_t>(index_.capacity_at(i), 1));
    };
    // A prefix cached nowhere: the least full index becomes its home, SGLang's "smallest tree",
    // so that new prefixes spread evenly; ties to the estimate.
    if (new_prefix && fill(a.replica) != fill(b.replica))
        return fill(a.replica) < fill(b.replica);
    if (a.seconds != b.seconds)
        return a.seconds < b.seconds;
    if (a.matched != b.matched)
        return a.matched > b.matched;
    const double la = load_score(pool.replicas[a.replica], kv_weight_);
    const double lb = load_score(pool.replicas[b.replica], kv_weight_);
    if (la != lb)
        return la < lb;
    if (fill(a.replica) != fill(b.replica))
        return fill(a.replica) < fill(b.replica);
    return order.before(a.replica, b.replica);
}

} // namespace lanes::router
