// What one proxied request is, as the planner made it for the dispatcher: its routing request,
// its model, its blocks, whether the policy routes it, the replica it is pinned to, and whose it
// is. The dispatcher keeps it for the request's life; rr's model and blocks then view its fields.
#pragma once

#include "common/prompt/block_hash.hpp"
#include "router/access/client.hpp"
#include "router/policies/policy.hpp"

#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace lanes::router {

struct dispatch_plan {
    route_request rr;
    std::string model;       // as resolved (rr.model views it, from dispatch on)
    std::string model_label; // the model in metrics and the live page (planner::model_label)
    std::vector<common::block_hash> blocks;
    bool by_policy = true;             // the routing policy, else least-loaded
    std::optional<std::string> pinned; // the replica that must answer (a response's producer)
    bool capture_response_id = false;
    std::size_t block_tokens = common::default_block_size;
    std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
    client who;
    bool ideal_counted = false; // its blocks went through the ideal cache (once, not per attempt)
};

} // namespace lanes::router
