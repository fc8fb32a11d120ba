// random: a uniformly random eligible replica. No knobs besides the seed (the RNG is seeded from
// it, so tests are deterministic). The simplest baseline (SGLang's and Dynamo's
// `random`, vLLM production-stack's session-less fallback).
#pragma once

#include "router/policies/policy.hpp"

#include <cstddef>
#include <random>

namespace lanes::router {

// A uniform index in [0, n) by rejection sampling (portable, unlike
// std::uniform_int_distribution, so a seed picks the same sequence on every standard library).
// n must be > 0.
std::size_t uniform_index(std::mt19937_64& rng, std::size_t n);

class random_policy final : public policy {
public:
    explicit random_policy(const policy_options& options);
    std::string_view name() const override { return "random"; }
    decision pick(const route_request& req, const pool_snapshot& pool,
                  const tried_set& tried) override;

private:
    std::mt19937_64 rng_;
};

} // namespace lanes::router
