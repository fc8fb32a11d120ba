// prefix (the default): send a request where its prompt prefix is most likely cached, unless that
// would overload a replica. SGLang's cache_aware policy over a per-replica index of block hashes
// (prefix_index.hpp), with its prefix_hash placement for an empty index and the bounded-load cap
// of consistent hashing with bounded loads (load.hpp). A pick:
//  1. imbalance: when (max - min) load score > balance_abs_threshold AND max >
//     balance_rel_threshold * min over the eligible replicas -> least_loaded (prefix_imbalance);
//  2. a request without blocks -> least_loaded (prefix_miss);
//  3. an index that knows no block of any eligible replica (a fresh router) -> rendezvous hashing
//     of the first index_knobs::hash_prefix_blocks blocks within the load cap, so independent
//     routers agree (prefix_hash);
//  4. the longest match wins; ties go to the lower load score, where every
//     prefix_knobs::match_prefill_blocks blocks of prefill pending at a replica count as one more
//     request, then rendezvous order. A match of 0 or under min_match_ratio of the blocks is a
//     miss: among the replicas within the load cap, the one whose index is least full (new
//     prefixes spread evenly, SGLang's "smallest tree"), ties to the lowest load score plus the
//     prefill pending there (prefix_knobs::miss_prefill_weight), then rendezvous order
//     (prefix_miss);
//  5. a winner over the cap (load.hpp, with prefix_knobs::load_factor plus
//     long_match_load_factor times the share of the prompt it holds) -> the longest match among
//     replicas within the cap of load_factor alone (prefix_overload), else prefix_match.
// on_routed records the request's blocks under the replica it went to, and its uncached blocks as
// pending prefill there until on_first_byte. The knobs and their
// defaults are prefix_knobs below, index_knobs (prefix_index.hpp) and load_knobs (load.hpp).
#pragma once

#include "router/index/precise_index.hpp"
#include "router/index/prefix_index.hpp"
#include "router/policies/least_loaded.hpp"
#include "router/policies/policy.hpp"

#include <optional>
#include <string>
#include <unordered_map>

namespace lanes::router {

struct prefix_knobs {
    // The bounded-load cap's factor for leaving the replica that caches a prefix: looser than
    // session's, because a request pushed off its cached replica makes a second copy of the
    // prefix there, which evicts others.
    double load_factor = 2.0;
    // The cap's factor for leaving a prefix's home grows by this times the share of the prompt
    // the home holds (a whole prompt cached: load_factor + this): the longer the prefix a request
    // would recompute elsewhere, the more load its home takes first. 0: load_factor alone.
    double long_match_load_factor = 1.0;
    // Least-loaded instead when (max - min) load > balance_abs_threshold AND max >
    // balance_rel_threshold * min (SGLang's defaults).
    double balance_abs_threshold = 64.0;
    double balance_rel_threshold = 1.5;
    // A match shorter than this fraction of the request's blocks is a miss. SGLang's
    // cache_threshold is 0.3; 0.1 keeps a long turn whose history is a small share of it on the
    // replica holding that history (docs/results.md, the Mooncake traces).
    double min_match_ratio = 0.1;
    // A miss goes to the replica with the lowest load score plus this times its pending prefill
    // (uncached prompt blocks routed to it whose answer has not begun) over the request's own
    // blocks; 0: the load score alone.
    double miss_prefill_weight = 16.0;
    // Between equally long matches, this many blocks of prefill pending at a replica count as
    // one more request in flight there (128: 2048 tokens of 16, one step's prefill budget in
    // vLLM's default scheduler): a short prompt whose prefix every replica holds does not queue
    // behind a long prompt's prefill. 0: the load score alone.
    std::int64_t match_prefill_blocks = 128;
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
    struct candidate {
        std::size_t index;   // into pool.replicas
        double load;         // busy(): load score with the prefill pending
        std::size_t matched; // cached prefix, in blocks
    };

    bool imbalanced(const pool_snapshot& pool, const std::vector<std::size_t>& candidates) const;
    decision choose(const route_request& req, const pool_snapshot& pool,
                    const exclusion& out) const override;
    decision delegate(const route_request& req, const pool_snapshot& pool, const exclusion& out,
                      route_reason reason) const;
    // The load score plus `per_block` times the prefill pending at replica i, in whole requests.
    double busy(const pool_snapshot& pool, std::size_t i, double per_block) const;
    decision least_cached(const route_request& req, const pool_snapshot& pool,
                          const std::vector<std::size_t>& candidates) const;
    decision by_hash(const route_request& req, const pool_snapshot& pool,
                     const std::vector<std::size_t>& candidates) const;
    // A new prefix while the replicas' events report nothing cached anywhere: rendezvous order,
    // passing over a replica whose index is fuller than the mean by a request's blocks.
    decision spread_by_hash(const route_request& req, const pool_snapshot& pool,
                            const std::vector<std::size_t>& candidates) const;
    // Steps 4 and 5 on one index: the precise one (where replicas publish events) or the
    // approximate one; nullopt for a miss.
    std::optional<decision> longest(const route_request& req, const pool_snapshot& pool,
                                    const exclusion& out,
                                    const std::vector<std::size_t>& candidates, bool precise) const;

    // What replica `i` holds of `blocks`: its KV events' word when it publishes them (and its
    // stream is complete), else the approximate index's guess.
    std::size_t matched(const pool_snapshot& pool, std::size_t i,
                        std::span<const common::block_hash> blocks) const;
    // What one decision reads of the precise index: its lock taken once and the clock read
    // once, on first use (a decision asks matched() and precise_at() of every candidate).
    // choose() lets both go as it ends.
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
    decision choose_within(const route_request& req, const pool_snapshot& pool,
                           const exclusion& out) const;

    least_loaded_policy fallback_;
    prefix_index index_;
    std::shared_ptr<precise_index> precise_;
    clock_fn clock_; // what pending expectations in the precise index are timed by
    mutable decision_reading reading_; // during choose() only
    double kv_weight_;
    double load_factor_;
    double long_match_load_factor_;
    std::int64_t cap_floor_;
    double balance_abs_;
    double balance_rel_;
    double min_match_ratio_;
    double miss_prefill_weight_;
    std::int64_t match_prefill_blocks_;
    std::size_t hash_prefix_blocks_;
    // Uncached prompt blocks routed to each replica whose answer has not begun.
    std::unordered_map<std::string, std::int64_t> prefilling_;
    std::int64_t prefilling_at(const pool_snapshot& pool, std::size_t i) const;
};

} // namespace lanes::router
