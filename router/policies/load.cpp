#include "router/policies/load.hpp"

#include <algorithm>
#include <cmath>

namespace lanes::router {

double load_score(const replica_view& r, double kv_weight) {
    return static_cast<double>(r.inflight) + static_cast<double>(r.waiting.value_or(0)) +
           kv_weight * r.kv_usage.value_or(0.0);
}

std::int64_t load_cap(const pool_snapshot& pool, std::span<const std::size_t> candidates,
                      double load_factor, std::int64_t cap_floor) {
    if (candidates.empty())
        return 0;
    std::int64_t total = 0;
    for (const std::size_t i : candidates)
        total += std::max<std::int64_t>(pool.replicas[i].inflight, 0);
    const double raw =
        load_factor * static_cast<double>(total + 1) / static_cast<double>(candidates.size());
    // The epsilon keeps an exact quotient (e.g. 5.0 computed as 5.000000000001) from rounding up.
    return std::max(static_cast<std::int64_t>(std::ceil(raw - 1e-9)), cap_floor);
}

} // namespace lanes::router
