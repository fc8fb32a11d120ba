#include "bench/sim/peers/power_of_two.hpp"

namespace lanes::bench::sim {

std::size_t power_of_two::pick(const sim_request&, const router::pool_snapshot& pool, double) {
    const std::size_t n = pool.replicas.size();
    if (n < 2)
        return 0;
    const std::size_t a = std::uniform_int_distribution<std::size_t>(0, n - 1)(rng_);
    std::size_t b = std::uniform_int_distribution<std::size_t>(0, n - 2)(rng_);
    if (b >= a)
        ++b;
    return pool.replicas[b].inflight < pool.replicas[a].inflight ? b : a;
}

} // namespace lanes::bench::sim
