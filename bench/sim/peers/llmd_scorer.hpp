// llm-d's default scheduling profile (Gateway API Inference Extension endpoint picker,
// pkg/epp/config/loader/defaults.go), as a simulator baseline: per endpoint the weighted sum of
//  - prefix-cache-scorer (weight 3): matched blocks / request blocks in its approximate index;
//  - queue-scorer (weight 2): (max_q - q) / (max_q - min_q) over the scraped waiting queues, 1 for
//    all when they are equal;
//  - kv-cache-utilization-scorer (weight 2): 1 - scraped KV usage;
// and the max-score picker (ties at random). Its approximate index
// (.../dataproducer/approximateprefix): the prompt cut into blocks of block_size_tokens x
// chars_per_token characters (a trailing partial block included), chained xxhash64 from a seed of
// the model's name, at most 256 blocks; hash -> endpoints, an LRU of capacity blocks per
// endpoint, written after the pick (so two concurrent identical requests can both miss). Its
// metrics are read every 50 ms (--refresh-metrics-interval) and ignored when older than 2 s.
// chars_per_token is 1 here, not llm-d's 4: a lanes token is a byte, and 4 would make its blocks
// four engine blocks long and its capacity four times the engine's.
#pragma once

#include "bench/sim/sim_policy.hpp"
#include "router/index/block_lru.hpp"

#include <random>
#include <unordered_map>

namespace lanes::bench::sim {

struct llmd_scorer_knobs {
    double prefix_weight = 3;
    double queue_weight = 2;
    double kv_weight = 2;
    std::size_t block_size_tokens = 16;
    std::size_t chars_per_token = 1;
    std::size_t max_prefix_blocks = 256;
    std::size_t lru_capacity = 31250; // per endpoint; the replica's num_gpu_blocks when known
    double refresh_metrics_s = 0.05;
};

class llmd_scorer final : public sim_policy {
public:
    explicit llmd_scorer(std::uint64_t seed, llmd_scorer_knobs k = {})
        : knobs_(k)
        , rng_(seed) {}
    std::string_view name() const override { return "llmd_scorer"; }
    std::size_t pick(const sim_request& req, const router::pool_snapshot& pool,
                     double now) override;
    void on_routed(const sim_request& req, std::size_t replica, double now) override;
    std::optional<double> scrape_interval_s() const override { return knobs_.refresh_metrics_s; }
    std::string_view last_reason() const override { return "max_score"; }

    // The index's block hashes of a prompt.
    std::vector<std::uint64_t> hashes(std::string_view text) const;
    // The three scores of endpoint i for the last pick (tests).
    struct scores {
        double prefix = 0, queue = 0, kv = 0;
    };
    const std::vector<scores>& last_scores() const { return last_; }

private:
    llmd_scorer_knobs knobs_;
    std::mt19937_64 rng_;
    std::unordered_map<std::size_t, router::block_lru> index_; // endpoint -> its LRU of hashes
    std::vector<std::uint64_t> pending_;                       // the last pick's hashes
    std::vector<std::size_t> capacity_; // per endpoint: its num_gpu_blocks (auto-tuned)
    std::vector<scores> last_;
};

} // namespace lanes::bench::sim
