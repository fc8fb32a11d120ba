#include "router/policies/policy.hpp"

#include "router/policies/kv_aware.hpp"
#include "router/policies/least_loaded.hpp"
#include "router/policies/prefix.hpp"
#include "router/policies/random.hpp"
#include "router/policies/round_robin.hpp"
#include "router/policies/session.hpp"

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
    case route_reason::prefix_imbalance:
        return "prefix_imbalance";
    case route_reason::prefix_overload:
        return "prefix_overload";
    case route_reason::prefix_miss:
        return "prefix_miss";
    case route_reason::prefix_hash:
        return "prefix_hash";
    case route_reason::kv_cost:
        return "kv_cost";
    }
    return "unknown";
}

bool eligible(const replica_view& r, const tried_set& tried) {
    return r.routable && std::find(tried.begin(), tried.end(), r.id) == tried.end();
}

std::vector<std::size_t> eligible_indices(const pool_snapshot& pool, const tried_set& tried) {
    std::vector<std::size_t> out;
    out.reserve(pool.replicas.size());
    for (std::size_t i = 0; i < pool.replicas.size(); ++i)
        if (eligible(pool.replicas[i], tried))
            out.push_back(i);
    return out;
}

const std::vector<std::string>& policy_names() {
    static const std::vector<std::string> names = {"round_robin", "random", "least_loaded",
                                                   "session",     "prefix", "kv_aware"};
    return names;
}

std::unique_ptr<policy> make_policy(std::string_view name, const policy_options& options) {
    if (name == "round_robin")
        return std::make_unique<round_robin_policy>();
    if (name == "random")
        return std::make_unique<random_policy>(options);
    if (name == "least_loaded")
        return std::make_unique<least_loaded_policy>(options);
    if (name == "session")
        return std::make_unique<session_policy>(options);
    if (name == "prefix")
        return std::make_unique<prefix_policy>(options);
    if (name == "kv_aware")
        return std::make_unique<kv_aware_policy>(options);
    return nullptr;
}

} // namespace lanes::router
