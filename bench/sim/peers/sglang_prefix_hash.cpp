#include "bench/sim/peers/sglang_prefix_hash.hpp"

#include <xxhash.h>

#include <algorithm>

namespace lanes::bench::sim {

std::size_t sglang_prefix_hash::pick(const sim_request& req, const router::pool_snapshot& pool,
                                     double) {
    const auto& r = pool.replicas;
    if (ring_.workers() != r.size()) {
        std::vector<std::string> ids;
        for (const auto& v : r)
            ids.push_back(v.id);
        ring_.build(ids, knobs_.vnodes);
    }
    const std::string_view head = req.text.substr(0, knobs_.prefix_token_count);
    const std::size_t ring_choice =
        ring_.worker_at(ring_.first_at(XXH3_64bits(head.data(), head.size())));
    std::int64_t total = 0;
    for (const auto& v : r)
        total += v.inflight;
    const double bound =
        static_cast<double>(total + 1) / static_cast<double>(r.size()) * knobs_.load_factor;
    if (static_cast<double>(r[ring_choice].inflight) <= bound) {
        reason_ = "ring_hit";
        return ring_choice;
    }
    std::optional<std::size_t> best;
    for (std::size_t i = 0; i < r.size(); ++i)
        if (static_cast<double>(r[i].inflight) <= bound &&
            (!best || r[i].inflight < r[*best].inflight))
            best = i;
    reason_ = best ? "load_balance_walk" : "fallback_ring";
    return best.value_or(ring_choice);
}

} // namespace lanes::bench::sim
