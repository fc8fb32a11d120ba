#include "bench/sim/peers/sglang_cache_aware.hpp"

#include <algorithm>

namespace lanes::bench::sim {

std::size_t sglang_cache_aware::pick(const sim_request& req, const router::pool_snapshot& pool,
                                     double now) {
    if (next_eviction_ < 0)
        next_eviction_ = now + knobs_.eviction_interval_s;
    while (now >= next_eviction_) {
        for (std::size_t i = 0; i < pool.replicas.size(); ++i)
            tree_.evict(static_cast<int>(i), knobs_.max_tree_size);
        next_eviction_ += knobs_.eviction_interval_s;
    }
    const auto& r = pool.replicas;
    std::size_t least = 0;
    std::int64_t lo = r[0].inflight, hi = r[0].inflight;
    for (std::size_t i = 1; i < r.size(); ++i) {
        if (r[i].inflight < r[least].inflight)
            least = i;
        lo = std::min(lo, r[i].inflight);
        hi = std::max(hi, r[i].inflight);
    }
    std::size_t chosen = least;
    const bool imbalanced =
        static_cast<double>(hi - lo) > knobs_.balance_abs_threshold &&
        static_cast<double>(hi) > static_cast<double>(lo) * knobs_.balance_rel_threshold;
    if (imbalanced) {
        reason_ = "imbalanced";
    } else {
        const auto m = tree_.longest(req.text);
        const double rate =
            req.text.empty() ? 0.0
                             : static_cast<double>(m.chars) / static_cast<double>(req.text.size());
        if (rate > knobs_.cache_threshold && m.tenant >= 0 &&
            static_cast<std::size_t>(m.tenant) < r.size()) {
            chosen = static_cast<std::size_t>(m.tenant);
            reason_ = "cache_hit";
        } else {
            reason_ = "cache_miss";
        }
    }
    tree_.insert(req.text, static_cast<int>(chosen), now);
    return chosen;
}

} // namespace lanes::bench::sim
