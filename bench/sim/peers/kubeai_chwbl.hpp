// KubeAI's PrefixHash load balancing (substratusai/kubeai, internal/loadbalancer; docs
// "Load Balancing"): consistent hashing with bounded loads (Mirrokni, Thorup, Zadimoghaddam) over
// the first prefixCharLength characters of the prompt, `replication` virtual nodes per endpoint.
// From the prefix's point, the ring is walked clockwise to the first endpoint whose in-flight
// load is within meanLoadFactor times the mean load (counting this request); that one takes it.
#pragma once

#include "bench/sim/peers/consistent_ring.hpp"
#include "bench/sim/sim_policy.hpp"

namespace lanes::bench::sim {

struct kubeai_chwbl_knobs {
    std::size_t prefix_char_length = 100;
    std::size_t replication = 256;
    double mean_load_factor = 1.25;
};

class kubeai_chwbl final : public sim_policy {
public:
    explicit kubeai_chwbl(kubeai_chwbl_knobs k = {})
        : knobs_(k) {}
    std::string_view name() const override { return "kubeai_chwbl"; }
    std::size_t pick(const sim_request& req, const router::pool_snapshot& pool,
                     double now) override;
    std::string_view last_reason() const override { return reason_; }

private:
    kubeai_chwbl_knobs knobs_;
    consistent_ring ring_;
    std::string_view reason_;
};

} // namespace lanes::bench::sim
