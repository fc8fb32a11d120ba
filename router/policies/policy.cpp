#include "router/policies/policy.hpp"

#include "router/policies/round_robin.hpp"

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

const std::vector<std::string>& policy_names() {
    static const std::vector<std::string> names = {"round_robin"};
    return names;
}

std::unique_ptr<policy> make_policy(std::string_view name, const policy_options&) {
    if (name == "round_robin")
        return std::make_unique<round_robin_policy>();
    return nullptr;
}

} // namespace lanes::router
