// SGLang's prefix_hash policy (sgl-project/sglang, sgl-model-gateway/src/policies/prefix_hash.rs),
// as a simulator baseline: xxh3-64 of the request's first prefix_token_count tokens (here bytes:
// a lanes token is a byte) picks a point on a consistent-hash ring of the workers; the ring's
// worker takes it while its in-flight load <= (total load + 1) / workers * load_factor; else the
// least-loaded worker under that bound; with every worker over it, the ring's worker all the same.
#pragma once

#include "bench/sim/peers/consistent_ring.hpp"
#include "bench/sim/sim_policy.hpp"

namespace lanes::bench::sim {

struct sglang_prefix_hash_knobs {
    std::size_t prefix_token_count = 256;
    double load_factor = 1.25;
    std::size_t vnodes = 160; // points per worker (not a published default; placement only)
};

class sglang_prefix_hash final : public sim_policy {
public:
    explicit sglang_prefix_hash(sglang_prefix_hash_knobs k = {})
        : knobs_(k) {}
    std::string_view name() const override { return "sglang_prefix_hash"; }
    std::size_t pick(const sim_request& req, const router::pool_snapshot& pool,
                     double now) override;
    std::string_view last_reason() const override { return reason_; }

private:
    sglang_prefix_hash_knobs knobs_;
    consistent_ring ring_;
    std::string_view reason_;
};

} // namespace lanes::bench::sim
