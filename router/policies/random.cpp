#include "router/policies/random.hpp"

#include "router/policies/factory.hpp"

namespace lanes::router {

random_policy::random_policy(const policy_options& options)
    : draws_(options.seed) {}

decision random_policy::choose(const route_request& req, const pool_snapshot& pool,
                               const exclusion& out) const {
    const std::vector<std::size_t> candidates = eligible_indices(pool, req, out.tried, out.full);
    if (candidates.empty())
        return {std::nullopt, route_reason::random, 0};
    auto draws = draws_.for_decision();
    return {candidates[draws.below(candidates.size())], route_reason::random, 0};
}

} // namespace lanes::router
