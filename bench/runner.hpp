// lanes-bench's load loop: keep-alive streaming clients on one Asio thread, a closed loop at a
// fixed concurrency, recording per request the time to first token, inter-token gaps, end-to-end
// latency, output chunks, status and the replica that served it.
#pragma once

#include "common/http_client.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace lanes::bench {

struct bench_config {
    std::string url = "http://127.0.0.1:8000";
    std::string workload = "random";
    std::int64_t requests = 64;
    std::int64_t concurrency = 8;
    std::int64_t input_len = 256; // prompt bytes (= tokens, byte-level)
    std::int64_t output_len = 64; // max_tokens
    std::int64_t seed = 1;
    std::string model; // empty: let the server choose
    std::string out = "result.json";
    common::http::duration request_timeout{120'000};
};

struct request_record {
    int status = 0;
    std::string error;   // transport or protocol problem, empty when fine
    std::string replica; // x-lanes-replica
    double ttft = 0;     // seconds
    double e2e = 0;
    std::vector<double> itl;
    std::int64_t output_chunks = 0;
    std::int64_t prompt_tokens = 0;
    std::int64_t completion_tokens = 0;
};

struct prompt_spec {
    std::string prompt;
    std::int64_t max_tokens = 0;
};

// Prompts for the `random` workload: printable bytes, no sharing between prompts.
std::vector<prompt_spec> random_workload(const bench_config& cfg);

// Sends every prompt (closed loop at cfg.concurrency); returns one record per prompt, in order.
std::vector<request_record> run(const bench_config& cfg, const common::http::url& target,
                                const std::vector<prompt_spec>& prompts, double& wall_seconds);

} // namespace lanes::bench
