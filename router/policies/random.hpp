// random: a uniformly random eligible replica. No knobs besides the seed (the draws come from it,
// so tests are deterministic). The simplest baseline (SGLang's and Dynamo's
// `random`, vLLM production-stack's session-less fallback).
#pragma once

#include "router/policies/draws.hpp"
#include "router/policies/policy.hpp"

namespace lanes::router {

class random_policy final : public policy {
public:
    explicit random_policy(const policy_options& options);
    std::string_view name() const override { return "random"; }
    std::size_t on_routed(const route_request&, const std::string&) override {
        draws_.advance();
        return 0;
    }

private:
    decision choose(const route_request& req, const pool_snapshot& pool,
                    const exclusion& out) const override;

    seeded_draws draws_;
};

} // namespace lanes::router
