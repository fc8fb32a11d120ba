// prefix (the default): send a request where its first token comes soonest, counting what the
// replicas already cache. For each candidate the policy estimates the time to the request's first
// token there (docs/router.md, "The estimate"):
//     per_request_s + per_token_s x (prefill queued there + this request's uncached prefill there)
// in tokens, where the queue is the uncached prefill this router routed there whose first byte
// has not come, plus what the replica's scraped queue holds beyond this router's own (other
// routers' work), and the cost is that replica's prefill cost model, fitted online from its
// metrics (fleet/prefill_fit.hpp). What it caches comes from its KV events where it publishes
// them (the precise index), else from this router's memory of where prefixes went (the
// approximate index, SGLang's cache-aware tree as block hashes). The lowest estimate wins among
// the replicas within the bounded-load cap (load.hpp); ties go to the longer match, the lower
// load score, the less full index, then rendezvous order. A hot prefix thus earns a second home
// when its first one's queue outweighs the few blocks a copy costs, while a session whose long
// history is cached stays where it is. An index that knows nothing at all (a fresh router)
// places by rendezvous hashing of the first blocks, so that independent routers agree.
// Reasons: prefix_match(_precise) (the longest match won), prefix_overload (a replica holding
// less of the prompt won on its shorter queue or the cap), prefix_miss (nothing cached), and
// prefix_hash (the rendezvous placement).
#pragma once

#include "router/index/precise_index.hpp"
#include "router/index/prefix_index.hpp"
#include "router/policies/least_loaded.hpp"
#include "router/policies/policy.hpp"
#include "router/policies/rendezvous.hpp"

#include <optional>
#include <string>
#include <unordered_map>

namespace lanes::router {

struct prefix_knobs {
    // The bounded-load cap's factor (load.hpp): no replica takes more than this times the mean
    // in-flight load (above load_knobs::cap_floor), whatever its estimate.
    double load_factor = 1.5;
    // How many queued tokens one uncached prompt token weighs: its prefill now, and the copy it
    // makes, which evicts what later requests would have found cached and recomputes then.
    double recompute_weight = 16.0;
};

class prefix_policy final : public policy {
public:
    explicit prefix_policy(const policy_options& options);
    std::string_view name() const override { return "prefix"; }
    std::size_t on_routed(const route_request& req, const std::string& replica_id) override;
    void on_first_byte(const route_request& req, const std::string& replica_id,
                       std::size_t recorded) override;
    void on_outcome(const route_request& req, const std::string& replica_id, std::size_t recorded,
                    bool ok) override;
    void on_replicas_changed(const pool_snapshot& pool) override;

    const prefix_index& index() const { return index_; }

private:
    decision choose(const route_request& req, const pool_snapshot& pool,
                    const exclusion& out) const override;
    decision choose_within(const route_request& req, const pool_snapshot& pool,
                           const exclusion& out) const;
    decision delegate(const route_request& req, const pool_snapshot& pool, const exclusion& out,
                      route_reason reason) const;
    decision by_hash(const route_request& req, const pool_snapshot& pool,
                     const std::vector<std::size_t>& candidates) const;
    // A new prefix while the replicas' events report nothing cached anywhere: rendezvous order,
    // passing over a replica whose index is fuller than the mean by a request's blocks.
    // (nullopt where every replica within the cap is fuller than that.)
    std::optional<decision> spread_by_hash(const route_request& req, const pool_snapshot& pool,
                                           const std::vector<std::size_t>& candidates) const;
    // What each candidate holds of the prompt (indexed as the pool), whether the replicas'
    // events said so, and the most any holds.
    struct holdings {
        std::vector<std::size_t> blocks;
        bool by_events = false;
        std::size_t longest = 0;
    };
    holdings held_by(const route_request& req, const pool_snapshot& pool,
                     const std::vector<std::size_t>& candidates) const;
    // Whether `a` goes before `b`: the lower estimate (for a new prefix, the less full index
    // first), then the longer match, the lower load score, the less full index, rendezvous order.
    bool ranks_before(const candidate_estimate& a, const candidate_estimate& b,
                      const pool_snapshot& pool, bool new_prefix,
                      const rendezvous_order& order) const;
    // The estimate over the candidates, and the choice.
    decision by_estimate(const route_request& req, const pool_snapshot& pool,
                         const std::vector<std::size_t>& candidates) const;
    // The estimated seconds to the first token at `r`, with `fleet` the fleet's cost model.
    double estimate(const replica_view& r, const prefill_cost& fleet, double queued_tokens,
                    double uncached_tokens) const;
    // Tokens of prefill queued at replica i: this router's own, and the scraped queue's excess.
    double queued_tokens(const pool_snapshot& pool, std::size_t i, double tokens_per_block) const;

    // What replica `i` holds of `blocks`: its KV events' word when it publishes them (and its
    // stream is complete), else the approximate index's guess.
    std::size_t matched(const pool_snapshot& pool, std::size_t i,
                        std::span<const common::block_hash> blocks) const;
    // What one decision reads of the precise index: its lock taken once and the clock read
    // once, on first use. choose() lets both go as it ends.
    struct decision_reading {
        std::optional<precise_index::reading> index;
        std::optional<std::chrono::steady_clock::time_point> now;
        void clear() {
            index.reset();
            now.reset();
        }
    };
    const precise_index::reading& precise_reading() const {
        if (!reading_.index)
            reading_.index.emplace(*precise_);
        return *reading_.index;
    }
    std::chrono::steady_clock::time_point decision_now() const {
        if (!reading_.now)
            reading_.now = clock_();
        return *reading_.now;
    }
    bool precise_at(const pool_snapshot& pool, std::size_t i) const {
        return precise_ && precise_reading().live(pool.replicas[i].id, pool.replicas[i].epoch);
    }

    least_loaded_policy fallback_;
    prefix_index index_;
    std::shared_ptr<precise_index> precise_;
    clock_fn clock_; // what pending expectations in the precise index are timed by
    mutable decision_reading reading_; // during choose() only
    double kv_weight_;
    double load_factor_;
    double recompute_weight_;
    std::int64_t cap_floor_;
    std::size_t hash_prefix_blocks_;
    // Per replica: uncached prompt blocks routed whose answer has not begun, and how many
    // requests those are.
    struct pending {
        std::int64_t blocks = 0;
        std::int64_t requests = 0;
    };
    std::unordered_map<std::string, pending> prefilling_;
    const pending* prefilling_at(const pool_snapshot& pool, std::size_t i) const;
    // The mean uncached blocks of the requests routed (an exponential average): what one
    // request in a replica's scraped queue beyond this router's own is taken to hold.
    double mean_uncached_blocks_ = 0;
};

} // namespace lanes::router
