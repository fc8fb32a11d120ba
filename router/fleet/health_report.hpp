// Where every outcome a replica's health hears of goes: an answer or a failure on the request
// path, and each /health probe. The circuit breaker (health.hpp) decides; this logs what changed,
// counts ejections, and moves the replica's epoch on an ejection (what the router remembers of its
// cache is stale then).
#pragma once

#include "router/fleet/replica_pool.hpp"
#include "router/metrics.hpp"

#include <chrono>

namespace lanes::router {

void report_health(replica& r, bool ok, router_metrics& metrics,
                   failure_origin origin = failure_origin::request,
                   std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());

} // namespace lanes::router
