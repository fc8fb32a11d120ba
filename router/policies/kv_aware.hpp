// kv_aware: NVIDIA Dynamo's KV router cost. For each eligible replica
//   cost = overlap_weight * (request blocks not cached there) + decode_load,
// where the cached blocks come from the same prefix_index as the prefix policy and decode_load is
// the replica's active KV blocks: the larger of kv_usage * num_blocks (when known) and the estimate
// inflight * the request's block count (the scrape lags bursts the router has just sent). The
// lowest cost wins (ties: lower inflight, then rendezvous order of the first blocks). So a cached
// prefix wins unless the replica's decode load exceeds the prefill it would save. Knobs:
// kv_aware_knobs below and index_knobs (prefix_index.hpp; hash_prefix_blocks sets the tie order).
// on_routed records the request's blocks under the replica it went to.
#pragma once

#include "router/index/precise_index.hpp"
#include "router/index/prefix_index.hpp"
#include "router/policies/policy.hpp"

#include <string>

namespace lanes::router {

struct kv_aware_knobs {
    // Cost of one uncached prompt block against one active KV block (Dynamo's
    // overlap_score_weight).
    double overlap_weight = 1.0;
};

class kv_aware_policy final : public policy {
public:
    explicit kv_aware_policy(const policy_options& options);
    std::string_view name() const override { return "kv_aware"; }
    std::size_t on_routed(const route_request& req, const std::string& replica_id) override;
    void on_outcome(const route_request& req, const std::string& replica_id, std::size_t recorded,
                    bool ok) override;
    void on_replicas_changed(const pool_snapshot& pool) override;

    const prefix_index& index() const { return index_; }

private:
    decision choose(const route_request& req, const pool_snapshot& pool,
                    const exclusion& out) const override;

    prefix_index index_;
    std::shared_ptr<precise_index> precise_; // the replicas' KV events, where they publish them
    clock_fn clock_;                         // what its pending expectations are timed by
    double overlap_weight_;
    std::size_t hash_prefix_blocks_;
};

} // namespace lanes::router
