// least_loaded: power of two choices (Mitzenmacher 2001). Draw two distinct eligible replicas at
// random and take the one with the lower load score (load.hpp: inflight + waiting + kv_weight *
// kv_usage; ties go to the first drawn); with one eligible replica take it. Knobs: load_knobs'
// kv_weight, and the seed. As SGLang's `power_of_two`; sampling two instead of scanning for the
// global minimum keeps several routers with slightly stale loads from all piling onto the same
// replica. Other policies hold one of these as their fallback.
#pragma once

#include "router/policies/draws.hpp"
#include "router/policies/policy.hpp"

namespace lanes::router {

class least_loaded_policy final : public policy {
public:
    explicit least_loaded_policy(const policy_options& options);
    std::string_view name() const override { return "least_loaded"; }
    std::size_t on_routed(const route_request&, const std::string&) override {
        draws_.advance();
        return 0;
    }

private:
    decision choose(const route_request& req, const pool_snapshot& pool,
                    const exclusion& out) const override;

    seeded_draws draws_;
    double kv_weight_;
};

} // namespace lanes::router
