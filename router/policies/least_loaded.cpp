#include "router/policies/least_loaded.hpp"

#include "router/policies/factory.hpp"

#include "router/policies/load.hpp"

namespace lanes::router {

least_loaded_policy::least_loaded_policy(const policy_options& options)
    : draws_(options.seed)
    , kv_weight_(options.load.kv_weight) {}

decision least_loaded_policy::choose(const route_request& req, const pool_snapshot& pool,
                                     const exclusion& out) const {
    const std::vector<std::size_t> candidates = eligible_indices(pool, req, out.tried, out.full);
    if (candidates.empty())
        return {std::nullopt, route_reason::least_loaded, 0};
    if (candidates.size() == 1)
        return {candidates.front(), route_reason::least_loaded, 0};
    const std::size_t n = candidates.size();
    auto draws = draws_.for_decision();
    const std::size_t first = draws.below(n);
    std::size_t second = draws.below(n - 1);
    if (second >= first)
        ++second; // distinct from the first, still uniform over the rest
    const std::size_t a = candidates[first];
    const std::size_t b = candidates[second];
    const bool take_b =
        load_score(pool.replicas[b], kv_weight_) < load_score(pool.replicas[a], kv_weight_);
    return {take_b ? b : a, route_reason::least_loaded, 0};
}

} // namespace lanes::router
