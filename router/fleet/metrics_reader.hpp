// Reads a replica's /metrics into the values the router routes on, whatever engine wrote them:
// vLLM V1 (`vllm:kv_cache_usage_perc`, `vllm:prefix_cache_*_total`, `vllm:cache_config_info`),
// vLLM V0 / 0.9-0.10 (`vllm:gpu_cache_usage_perc`, `vllm:gpu_prefix_cache_*_total`), SGLang
// (`sglang:token_usage`, `sglang:num_running_reqs`, `sglang:num_queue_reqs`) and lanes replicas
// (vLLM V1 names, and lanes_replica_scheduler_info's max_num_seqs). Values are summed over `engine`
// label values (usage is averaged); `_created` series and unknown families are ignored.
#pragma once

#include "common/metrics/prom_parser.hpp"
#include "router/fleet/replica_pool.hpp"

namespace lanes::router {

// The most a replica is believed to hold, whatever it says: 2^26 KV blocks (a billion tokens in
// blocks of 16), blocks of at most 4096 tokens.
inline constexpr std::int64_t max_num_blocks = std::int64_t{1} << 26;
inline constexpr std::int64_t max_block_size = 4096;
inline constexpr std::int64_t max_num_seqs = 1 << 20;

scraped_stats read_replica_metrics(const common::prom::parse_result& parsed);

} // namespace lanes::router
