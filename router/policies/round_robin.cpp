#include "router/policies/round_robin.hpp"

namespace lanes::router {

decision round_robin_policy::pick(const route_request& req, const pool_snapshot& pool,
                                  const tried_set& tried) {
    const std::size_t n = pool.replicas.size();
    for (std::size_t i = 0; i < n; ++i) {
        const std::size_t idx = (next_ + i) % n;
        if (eligible(pool, idx, req, tried)) {
            next_ = idx + 1;
            return {idx, route_reason::round_robin, 0};
        }
    }
    return {std::nullopt, route_reason::round_robin, 0};
}

} // namespace lanes::router
