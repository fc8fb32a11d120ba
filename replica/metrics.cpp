#include "replica/metrics.hpp"

#include <vector>

namespace lanes::replica {

namespace m = common::metrics;

namespace {

// vLLM V1 bucket bounds (vllm/v1/metrics/loggers.py).
const std::vector<double> ttft_buckets = {0.001, 0.005, 0.01, 0.02,  0.04,  0.06,  0.08, 0.1,
                                          0.25,  0.5,   0.75, 1.0,   2.5,   5.0,   7.5,  10.0,
                                          20.0,  40.0,  80.0, 160.0, 640.0, 2560.0};
const std::vector<double> itl_buckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                         0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> request_latency_buckets = {
    0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

const std::vector<std::string> engine_labels = {"engine", "model_name"};

} // namespace

// Families are registered in vLLM's registration order.
replica_metrics::replica_metrics(const std::string& model, long block_size, long num_gpu_blocks)
    : model_(model)
    , running(registry_
                  .add_gauge("vllm:num_requests_running",
                             "Number of requests in model execution batches.", engine_labels)
                  .with({"0", model}))
    , waiting(registry_
                  .add_gauge("vllm:num_requests_waiting",
                             "Number of requests waiting to be processed.", engine_labels)
                  .with({"0", model}))
    , kv_usage(registry_
                   .add_gauge("vllm:kv_cache_usage_perc",
                              "KV-cache usage. 1 means 100 percent usage.", engine_labels)
                   .with({"0", model}))
    , prefix_queries(registry_
                         .add_counter("vllm:prefix_cache_queries_total",
                                      "Prefix cache queries, in terms of number of queried tokens.",
                                      engine_labels)
                         .with({"0", model}))
    , prefix_hits(registry_
                      .add_counter("vllm:prefix_cache_hits_total",
                                   "Prefix cache hits, in terms of number of cached tokens.",
                                   engine_labels)
                      .with({"0", model}))
    , preemptions(registry_
                      .add_counter("vllm:num_preemptions_total",
                                   "Cumulative number of preemption from the engine.",
                                   engine_labels)
                      .with({"0", model}))
    , prompt_tokens(registry_
                        .add_counter("vllm:prompt_tokens_total",
                                     "Number of prefill tokens processed.", engine_labels)
                        .with({"0", model}))
    , generation_tokens(registry_
                            .add_counter("vllm:generation_tokens_total",
                                         "Number of generation tokens processed.", engine_labels)
                            .with({"0", model}))
    , success_family_(registry_.add_counter("vllm:request_success_total",
                                            "Count of successfully processed requests.",
                                            {"engine", "finished_reason", "model_name"}))
    , ttft(registry_
               .add_histogram("vllm:time_to_first_token_seconds",
                              "Histogram of time to first token in seconds.", ttft_buckets,
                              engine_labels)
               .with({"0", model}))
    , itl(registry_
              .add_histogram("vllm:inter_token_latency_seconds",
                             "Histogram of inter-token latency in seconds.", itl_buckets,
                             engine_labels)
              .with({"0", model}))
    , e2e(registry_
              .add_histogram("vllm:e2e_request_latency_seconds",
                             "Histogram of e2e request latency in seconds.",
                             request_latency_buckets, engine_labels)
              .with({"0", model}))
    , queue_time(registry_
                     .add_histogram("vllm:request_queue_time_seconds",
                                    "Histogram of time spent in WAITING phase for request.",
                                    request_latency_buckets, engine_labels)
                     .with({"0", model}))
    , prefill_time(registry_
                       .add_histogram("vllm:request_prefill_time_seconds",
                                      "Histogram of time spent in PREFILL phase for request.",
                                      request_latency_buckets, engine_labels)
                       .with({"0", model})) {
    registry_
        .add_gauge("vllm:cache_config_info", "Information of the LLMEngine CacheConfig",
                   {"block_size", "enable_prefix_caching", "engine", "num_gpu_blocks"})
        .with({std::to_string(block_size), "True", "0", std::to_string(num_gpu_blocks)})
        .set(1.0);
    // Every finished_reason series exists from start-up, as in vLLM.
    for (const char* reason : {"stop", "length", "abort", "error"})
        success(reason);
}

void replica_metrics::announce_scheduler(long max_num_seqs, long max_num_batched_tokens) {
    registry_
        .add_gauge("lanes_replica_scheduler_info",
                   "The replica scheduler's limits: requests and tokens per step.",
                   {"max_num_batched_tokens", "max_num_seqs"})
        .with({std::to_string(max_num_batched_tokens), std::to_string(max_num_seqs)})
        .set(1);
}

common::metrics::counter& replica_metrics::announce_kv_events(const std::string& endpoint,
                                                              const std::string& replay_endpoint) {
    registry_
        .add_gauge("lanes_replica_kv_events_info",
                   "Where this replica publishes its KV-cache events (ZeroMQ, vLLM's format).",
                   {"endpoint", "replay_endpoint"})
        .with({endpoint, replay_endpoint})
        .set(1);
    return registry_
        .add_counter("lanes_replica_kv_events_dropped_total",
                     "KV-event batches dropped because the send queue was full.", {})
        .with({});
}

} // namespace lanes::replica
