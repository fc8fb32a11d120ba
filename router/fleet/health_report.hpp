// Where every outcome a replica's health hears of goes: an answer or a failure on the request
// path, a /health probe, a scrape that got no answer. The circuit breaker (health.hpp) decides;
// this logs what changed and counts ejections.
#pragma once

#include "router/fleet/replica_pool.hpp"
#include "router/metrics.hpp"

#include <chrono>

namespace lanes::router {

void report_health(replica& r, bool ok, router_metrics& metrics,
                   std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());

} // namespace lanes::router
