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
//  - random: no sharing.
#pragma once

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
};

struct request_spec {
    std::string prompt;
    std::int64_t max_tokens = 0;
    std::optional<std::string> session;
    double arrival_s = -1.0; // trace timestamp (scaled); < 0 when the arrival process decides
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
double ideal_hit_rate(const std::vector<stream>& workload, std::size_t block_size);

} // namespace lanes::bench
