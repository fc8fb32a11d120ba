// SGLang's cache_aware policy (sgl-project/sglang, sgl-model-gateway/src/policies/cache_aware.rs
// and tree.rs; CLI defaults from its router_args.py), as a simulator baseline. Per pick, with
// load = the router's own in-flight count per worker:
//  1. imbalanced = (max - min) > balance_abs_threshold AND max > min * balance_rel_threshold ->
//     the least-loaded worker;
//  2. else match_rate = matched characters / request characters in the character radix tree;
//     above cache_threshold -> the worker holding the longest match, else the least-loaded worker
//     (the fix for the "death spiral" of routing misses to the smallest tree);
// and the request's text is inserted under the chosen worker either way. Every
// eviction_interval the tree drops each worker's least recently used leaves down to
// max_tree_size characters.
#pragma once

#include "bench/sim/peers/char_radix_tree.hpp"
#include "bench/sim/sim_policy.hpp"

namespace lanes::bench::sim {

struct sglang_cache_aware_knobs {
    double cache_threshold = 0.3;
    double balance_abs_threshold = 64;
    double balance_rel_threshold = 1.5;
    double eviction_interval_s = 120;
    std::size_t max_tree_size = std::size_t{1} << 26;
};

class sglang_cache_aware final : public sim_policy {
public:
    explicit sglang_cache_aware(sglang_cache_aware_knobs k = {})
        : knobs_(k) {}
    std::string_view name() const override { return "sglang_cache_aware"; }
    std::size_t pick(const sim_request& req, const router::pool_snapshot& pool,
                     double now) override;
    std::string_view last_reason() const override { return reason_; }
    const char_radix_tree& tree() const { return tree_; }

private:
    sglang_cache_aware_knobs knobs_;
    char_radix_tree tree_;
    double next_eviction_ = -1;
    std::string_view reason_;
};

} // namespace lanes::bench::sim
