#include "router/policies/round_robin.hpp"

namespace lanes::router {

decision round_robin_policy::choose(const route_request& req, const pool_snapshot& pool,
                                    const exclusion& out) const {
    const std::size_t n = pool.replicas.size();
    std::size_t start = 0;
    if (last_at_ < n && pool.replicas[last_at_].id == last_) {
        start = last_at_ + 1;
    } else {
        for (std::size_t i = 0; i < n; ++i)
            if (pool.replicas[i].id == last_) {
                start = i + 1;
                break;
            }
    }
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t idx = (start + i) % n;
        if (eligible(pool, idx, req, out.tried, out.full)) {
            last_at_ = idx; // where the request will most likely go: on_routed's replica
            return {idx, route_reason::round_robin, 0};
        }
    }
    return {std::nullopt, route_reason::round_robin, 0};
}

} // namespace lanes::router
