#include "router/routing.hpp"

#include <algorithm>

namespace lanes::router {

std::string_view to_string(route_reason r) {
    switch (r) {
    case route_reason::round_robin:
        return "round_robin";
    case route_reason::random:
        return "random";
    case route_reason::least_loaded:
        return "least_loaded";
    case route_reason::session_sticky:
        return "session_sticky";
    case route_reason::session_new:
        return "session_new";
    case route_reason::session_spill:
        return "session_spill";
    case route_reason::prefix_match:
        return "prefix_match";
    case route_reason::prefix_match_precise:
        return "prefix_match_precise";
    case route_reason::prefix_overload:
        return "prefix_overload";
    case route_reason::prefix_miss:
        return "prefix_miss";
    case route_reason::prefix_hash:
        return "prefix_hash";
    case route_reason::kv_cost:
        return "kv_cost";
    case route_reason::response_affinity:
        return "response_affinity";
    }
    return "unknown";
}

bool eligible(const pool_snapshot& pool, std::size_t i, const route_request& req,
              const tried_set& tried, const tried_set& full) {
    const replica_view& r = pool.replicas[i];
    const auto in = [&](const tried_set& set) {
        return std::find(set.begin(), set.end(), r.id) != set.end();
    };
    return r.routable && (req.serves.empty() || (i < req.serves.size() && req.serves[i])) &&
           !in(tried) && !in(full);
}

std::vector<std::size_t> eligible_indices(const pool_snapshot& pool, const route_request& req,
                                          const tried_set& tried, const tried_set& full) {
    std::vector<std::size_t> out;
    out.reserve(pool.replicas.size());
    for (std::size_t i = 0; i < pool.replicas.size(); ++i)
        if (eligible(pool, i, req, tried, full))
            out.push_back(i);
    return out;
}

} // namespace lanes::router
