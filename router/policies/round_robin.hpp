// round_robin: the next eligible replica in turn. No knobs. The baseline every LLM router ships
// (nginx's default, SGLang's `round_robin`, vLLM production-stack's `roundrobin`).
#pragma once

#include "router/policies/policy.hpp"

namespace lanes::router {

class round_robin_policy final : public policy {
public:
    std::string_view name() const override { return "round_robin"; }
    decision pick(const route_request& req, const pool_snapshot& pool,
                  const tried_set& tried) override;

private:
    std::size_t next_ = 0;
};

} // namespace lanes::router
