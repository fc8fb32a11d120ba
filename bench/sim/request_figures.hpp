// The simulator's requests as it tracks them, and the figures of a run drawn from them (in
// lanes-bench's report's field names): latencies, throughput, and one row per request.
#pragma once

#include "bench/sim/decision_log.hpp"
#include "common/prompt/block_hash.hpp"

#include <nlohmann/json.hpp>

#include <cstddef>
#include <vector>

namespace lanes::bench::sim {

struct request_state {
    std::size_t stream = 0;
    std::size_t replica = 0;
    double sent = 0;
    double first = -1;
    double end = -1;
    std::size_t prompt_tokens = 0;
    std::size_t output_tokens = 0;
    std::vector<common::block_hash> blocks; // the router's, while in flight
};

// completed, failed, duration_s, the request and token throughputs over `duration_s`, and the
// ttft_s, tpot_s and e2e_s summaries (with p95).
nlohmann::json latency_figures(const std::vector<request_state>& requests, double duration_s);
// One row per request: its replica, the cache it found there against the best (the decision
// log's fields), TTFT and e2e.
nlohmann::json request_rows(const std::vector<request_state>& requests, const decision_log& log);

} // namespace lanes::bench::sim
