// NVIDIA Dynamo's KV router cost (ai-dynamo/dynamo, docs/components/router/router-concepts.md and
// router-configuration.md), as a simulator baseline. Its overlap comes from the workers' KV events
// where the simulation publishes them (its KvIndexer: what each worker says it stores, nothing
// credited on routing), else from its ApproxKvIndexer (--no-kv-events: routing decisions inserted
// with a 120 s TTL). Per worker, in blocks of block_size tokens:
//   adjusted_prefill = max(active_prefill_blocks + request_blocks - overlap_weight * overlap, 0)
//   decode_blocks    = active_decode_blocks + request_blocks
//   cost             = prefill_load_scale * adjusted_prefill + decode_blocks
// lowest cost wins (router_temperature 0; ties at random). Its load is its own prediction: a
// request's uncached blocks count as active prefill from routing to its first token, its prompt
// blocks as active decode blocks until it ends.
#pragma once

#include "bench/sim/sim_policy.hpp"

#include <memory>
#include <random>
#include <string>
#include <unordered_map>

namespace lanes::bench::sim {

struct dynamo_kv_knobs {
    double overlap_weight = 1.0;
    double prefill_load_scale = 1.0;
    double ttl_s = 120; // --router-ttl-secs of the approximate indexer
    // The workers' KV events (the simulator's replicas publish them); null: the approximate
    // indexer.
    std::shared_ptr<router::precise_index> events;
};

class dynamo_kv final : public sim_policy {
public:
    dynamo_kv(std::uint64_t seed, std::size_t block_size, dynamo_kv_knobs k = {})
        : knobs_(std::move(k))
        , block_size_(block_size)
        , rng_(seed) {}
    std::string_view name() const override { return "dynamo_kv"; }
    std::size_t pick(const sim_request& req, const router::pool_snapshot& pool,
                     double now) override;
    void on_routed(const sim_request& req, std::size_t replica, double now) override;
    void on_first_token(const sim_request& req, std::size_t replica, double now) override;
    void on_done(const sim_request& req, std::size_t replica, double now) override;
    std::string_view last_reason() const override { return "kv_cost"; }

    // Cached blocks the approximate indexer credits worker `w` with for `blocks` at `now`.
    std::size_t overlap(std::size_t w, std::span<const common::block_hash> blocks,
                        double now) const;
    double last_cost(std::size_t w) const { return w < costs_.size() ? costs_[w] : 0; }

private:
    struct worker {
        std::unordered_map<common::block_hash, double> seen; // block -> expiry
        double prefill = 0;                                  // active prefill blocks
        double decode = 0;                                   // active decode blocks
    };
    struct active {
        double prefill = 0;
        double decode = 0;
        bool prefilling = true;
    };
    dynamo_kv_knobs knobs_;
    std::size_t block_size_;
    std::mt19937_64 rng_;
    std::vector<worker> workers_;
    std::vector<std::string> ids_; // the pool's replica ids, for the KV events' index
    std::unordered_map<std::uint64_t, active> requests_;
    std::vector<double> costs_;
    std::vector<std::size_t> overlaps_; // the last pick's, per worker
    double next_prune_ = 0;             // expired entries are dropped now and then
};

} // namespace lanes::bench::sim
