#include "router/policies/least_loaded.hpp"

#include "router/policies/factory.hpp"

#include "router/policies/load.hpp"
#include "router/policies/random.hpp"

namespace lanes::router {

least_loaded_policy::least_loaded_policy(const policy_options& options)
    : rng_(options.seed)
    , kv_weight_(options.load.kv_weight) {}

decision least_loaded_policy::pick(const route_request& req, const pool_snapshot& pool,
                                   const tried_set& tried) {
    const std::vector<std::size_t> candidates = eligible_indices(pool, req, tried);
    if (candidates.empty())
        return {std::nullopt, route_reason::least_loaded, 0};
    if (candidates.size() == 1)
        return {candidates.front(), route_reason::least_loaded, 0};
    const std::size_t n = candidates.size();
    const std::size_t first = uniform_index(rng_, n);
    std::size_t second = uniform_index(rng_, n - 1);
    if (second >= first)
        ++second; // distinct from the first, still uniform over the rest
    const std::size_t a = candidates[first];
    const std::size_t b = candidates[second];
    const bool take_b =
        load_score(pool.replicas[b], kv_weight_) < load_score(pool.replicas[a], kv_weight_);
    return {take_b ? b : a, route_reason::least_loaded, 0};
}

} // namespace lanes::router
