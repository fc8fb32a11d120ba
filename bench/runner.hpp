// lanes-bench's load loop: keep-alive streaming clients on one Asio thread, a closed loop at a
// fixed concurrency, recording per request the time to first token, inter-token gaps, end-to-end
// latency, output chunks, status and the replica that served it.
#pragma once

#include "bench/workload.hpp"
#include "common/http/fetch.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace lanes::bench {

struct bench_config {
    std::string url = "http://127.0.0.1:8000";
    std::int64_t concurrency = 8; // closed loop: streams in flight
    double rate = 0.0;            // > 0: Poisson arrivals of streams per second (open loop)
    bool trace_times = false;     // open loop at the workload's own timestamps
    // With rate: each arrival is one request, the next turn of the session whose think time
    // ended longest ago, or else a new session (the skewed workloads).
    bool session_arrivals = false;
    double continue_share = 0.85; // of arrivals that find a session ready
    std::int64_t seed = 1;
    std::string model; // empty: let the server choose
    std::string out = "result.json";
    common::http::duration request_timeout{300'000};
    bool progress = false; // a live progress line on stderr
};

struct request_record {
    int status = 0;
    std::string error;   // transport or protocol problem, empty when fine
    std::string replica; // x-lanes-replica
    double start_s = 0;  // since the run began
    // Open loop, a stream's first request: when its arrival was due (start_s - this is how far
    // the client fell behind its schedule); negative when it had no schedule.
    double scheduled_s = -1;
    double ttft = 0; // seconds from sending (a new connection's connect included, as
                     // vllm bench serve counts it) to the first event with text
    double e2e = 0;
    std::vector<double> itl;
    std::int64_t output_chunks = 0;
    std::int64_t prompt_tokens = 0;
    std::int64_t completion_tokens = 0;
};

// Sends the workload; returns one record per request, streams flattened in order.
std::vector<request_record> run(const bench_config& cfg, const common::http::url& target,
                                const std::vector<stream>& workload, double& wall_seconds);

} // namespace lanes::bench
