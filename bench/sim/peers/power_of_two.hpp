// Power-of-two-choices least-request (SGLang's power_of_two, sgl-model-gateway/src/policies/
// power_of_two.rs; Envoy's LEAST_REQUEST, nginx's "random two least_conn"), as a simulator
// baseline: two distinct workers drawn at random, the one with fewer requests in flight (the
// router's own count) takes it; a tie goes to the first drawn.
#pragma once

#include "bench/sim/sim_policy.hpp"

#include <random>

namespace lanes::bench::sim {

class power_of_two final : public sim_policy {
public:
    explicit power_of_two(std::uint64_t seed)
        : rng_(seed) {}
    std::string_view name() const override { return "power_of_two"; }
    std::size_t pick(const sim_request& req, const router::pool_snapshot& pool,
                     double now) override;
    std::string_view last_reason() const override { return "power_of_two"; }

private:
    std::mt19937_64 rng_;
};

} // namespace lanes::bench::sim
