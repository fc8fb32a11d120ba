// lanes-bench's workloads (byte tokens, so lengths are bytes). A workload is a list of streams;
// a stream is one request, or the turns of one multi-turn conversation, sent one after another.
//  - shared-prefix: `groups` system prompts of `system_len`, `prompts_per_group` questions of
//    `question_len` each, shuffled (SGLang's generated-shared-prefix; defaults 64 x 16, 2048, 128,
//    output 256); optionally a session key per group;
//  - multi-turn: `sessions` conversations of `turns` turns; each turn resends the whole
//    conversation so far (chat template), with synthetic assistant replies of `output_len` bytes
//    and a session key;
//  - trace: a Mooncake-format JSONL (`timestamp` ms, `input_length`, `output_length`, `hash_ids`
//    of 512-token blocks): equal hash ids become identical blocks, so the trace's sharing is
//    reproduced exactly; `time_scale` multiplies timestamps, `length_scale` lengths and blocks;
//  - azure: Azure's LLM inference trace CSV (TIMESTAMP, ContextTokens, GeneratedTokens): lengths
//    and arrival times only, so its prompts share nothing (random text);
//  - random: no sharing;
//  - agents, hot-tenant, bursty (skewed_workload.cpp): multi-tenant agent sessions. Each of
//    `tenants` tenants has a system prompt of system_blocks_min..max blocks; a session starts on
//    its tenant's prompt and grows by growth_min..max blocks a turn for turns_min..max turns
//    (never past max_prompt tokens), with an exponential think time between turns. agents draws a
//    session's tenant by Zipf(zipf); hot-tenant gives tenant 0 hot_share of the sessions and
//    spreads the rest evenly; bursty switches each tenant on and off (exponential periods of
//    burst_on / burst_off sessions started) and draws among the tenants that are on by Zipf.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lanes::common {
class flag_set;
}

namespace lanes::bench {

struct workload_config {
    std::string kind = "shared-prefix";
    std::int64_t seed = 1;
    // shared-prefix
    std::int64_t groups = 64;
    std::int64_t prompts_per_group = 16;
    std::int64_t system_len = 2048;
    std::int64_t question_len = 128;
    bool session_per_group = false;
    // multi-turn
    std::int64_t sessions = 32;
    std::int64_t turns = 4;
    std::int64_t turn_len = 256; // user bytes per turn
    // random
    std::int64_t requests = 64;
    std::int64_t input_len = 256;
    // all
    std::int64_t output_len = 256;
    // trace
    std::string trace_file; // trace (Mooncake JSONL) or azure (CSV)
    double time_scale = 1.0;
    double length_scale = 1.0;
    std::int64_t trace_limit = 0; // first N requests (0 = all)
    // agents, hot-tenant, bursty (blocks are 16 tokens)
    std::int64_t skew_requests = 2400; // requests in all (sessions until this many turns)
    std::int64_t tenants = 32;
    double zipf = 1.0;
    std::int64_t system_blocks_min = 4, system_blocks_max = 16;
    std::int64_t turns_min = 1, turns_max = 10;
    std::int64_t growth_min = 1, growth_max = 6;
    std::int64_t max_prompt = 2048;             // tokens
    std::chrono::milliseconds think_time{1000}; // mean, exponential (at least; see below)
    // Open loop: the share of arrivals that take a ready session's next turn (the rest start a
    // new session); a turn waits its think time and then for an arrival that picks it.
    double continue_share = 0.85;
    double hot_share = 0.45;                      // hot-tenant
    std::int64_t burst_on = 150, burst_off = 300; // bursty: mean periods, in sessions started
    std::string write_trace;                      // write the workload as a replayable trace
    double trace_rate = 4.0;                      // its sessions' arrival rate (per second)
};

struct request_spec {
    std::string prompt;
    std::int64_t max_tokens = 0;
    std::optional<std::string> session;
    double arrival_s = -1.0; // trace timestamp (scaled); < 0 when the arrival process decides
    // With session arrivals (the skewed workloads, open loop): the least wait after the previous
    // turn of its stream ends before this one is sent (a user's or an agent's think time).
    // Closed loops, which measure capacity, do not wait.
    double think_s = 0;
};

using stream = std::vector<request_spec>;

// The workload's flags (--workload, --groups, ..., --trace), shared by lanes-bench's load run and
// its simulator.
void add_workload_flags(common::flag_set& f, workload_config& w);

// Builds the workload; on a bad trace file returns nothing and sets `error`.
std::vector<stream> make_workload(const workload_config& cfg, std::string& error);

// The workload's ideal prefix-cache hit rate: the fraction of prompt tokens (BOS included, as a
// replica counts them) in full blocks whose whole prefix an earlier request already sent — what
// one infinite cache would hit, with vLLM's cap of one computed token per request.
// The skewed workloads (kind agents, hot-tenant or bursty); empty for another kind.
std::vector<stream> skewed_workload(const workload_config& cfg, std::string& error);
bool is_skewed_workload(const std::string& kind);
// Writes `workload` as a trace lanes-bench replays (--workload trace): one JSON line per
// request, Mooncake's fields with hash_ids of `block_tokens`-token blocks (field block_tokens),
// its session in session_id, timestamps from Poisson session starts at `rate` per second plus
// the think times before each turn. False with `error` set when the file cannot be written.
bool write_trace(const std::vector<stream>& workload, const std::string& file, double rate,
                 std::int64_t seed, std::string& error);

double ideal_hit_rate(const std::vector<stream>& workload, std::size_t block_size);

} // namespace lanes::bench
