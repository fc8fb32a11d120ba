// lanes-bench's result file: throughput, latency summaries, errors by kind and the per-replica
// spread of requests (max/mean imbalance).
#pragma once

#include "bench/runner.hpp"

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace lanes::bench {

// What lanes-bench knows of the run besides the records.
struct run_context {
    workload_config workload;
    double ideal_hit_rate = 0;
    // The fleet's prefix-cache counters (tokens) read before and after the run, when available.
    std::optional<std::pair<double, double>> counters_before, counters_after;
    // The router's replicas (from its /metrics), so one that served nothing counts in the
    // imbalance as a zero, not as absent; empty when unknown (a replica's own URL).
    std::vector<std::string> replicas;
};

nlohmann::json make_report(const bench_config& cfg, const run_context& ctx,
                           const std::vector<request_record>& records, double wall_seconds);
// One human-readable paragraph of the report's main figures.
std::string describe(const nlohmann::json& report);

} // namespace lanes::bench
