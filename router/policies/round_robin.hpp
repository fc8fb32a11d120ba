// round_robin: the next eligible replica in turn: after the one the last request went to, in
// snapshot order (from the first when that one has left the pool). No knobs. The baseline every
// LLM router ships (nginx's default, SGLang's `round_robin`, vLLM production-stack's
// `roundrobin`). The turn moves on in on_routed, so a peek leaves it where it is.
#pragma once

#include "router/policies/policy.hpp"

#include <string>

namespace lanes::router {

class round_robin_policy final : public policy {
public:
    std::string_view name() const override { return "round_robin"; }
    std::size_t on_routed(const route_request&, const std::string& replica_id) override {
        last_ = replica_id;
        return 0;
    }

private:
    decision choose(const route_request& req, const pool_snapshot& pool,
                    const exclusion& out) const override;

    std::string last_; // the replica the last request went to
    // The index choose() last answered: where last_ usually stands next time, a hint that
    // spares the scan by id (it changes no choice).
    mutable std::size_t last_at_ = 0;
};

} // namespace lanes::router
