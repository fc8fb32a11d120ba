// lanes-bench's result file: throughput, latency summaries, errors by kind and the per-replica
// spread of requests (max/mean imbalance).
#pragma once

#include "bench/runner.hpp"

#include <nlohmann/json_fwd.hpp>

#include <string>

namespace lanes::bench {

nlohmann::json make_report(const bench_config& cfg, const std::vector<request_record>& records,
                           double wall_seconds);
// One human-readable paragraph of the report's main figures.
std::string describe(const nlohmann::json& report);

} // namespace lanes::bench
