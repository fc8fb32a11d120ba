#include "router/policies/random.hpp"

#include "router/policies/factory.hpp"

#include <cstdint>
#include <limits>

namespace lanes::router {

random_policy::random_policy(const policy_options& options)
    : rng_(options.seed) {}

std::size_t uniform_index(std::mt19937_64& rng, std::size_t n) {
    const std::uint64_t range = static_cast<std::uint64_t>(n);
    const std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    const std::uint64_t limit = max - max % range; // draws at or above it would bias the modulo
    std::uint64_t x = rng();
    while (x >= limit)
        x = rng();
    return static_cast<std::size_t>(x % range);
}

decision random_policy::pick(const route_request& req, const pool_snapshot& pool,
                             const tried_set& tried) {
    const std::vector<std::size_t> candidates = eligible_indices(pool, req, tried);
    if (candidates.empty())
        return {std::nullopt, route_reason::random, 0};
    return {candidates[uniform_index(rng_, candidates.size())], route_reason::random, 0};
}

} // namespace lanes::router
