// The replica's metrics, with vLLM V1's names, types, units, labels and buckets, so anything that
// reads vLLM's /metrics (the lanes router, llm-d, Grafana dashboards) reads a replica unchanged.
#pragma once

#include "common/metrics/registry.hpp"

#include <string>

namespace lanes::replica {

class replica_metrics {
    // Declared first, so it exists before the references below are bound into it.
    common::metrics::registry registry_;
    std::string model_;

public:
    replica_metrics(const std::string& model_name, long block_size, long num_gpu_blocks);

    std::string expose() const { return registry_.expose(); }

    // lanes_replica_kv_events_info{endpoint, replay_endpoint} 1, which a router's scrape reads
    // to subscribe; returns lanes_replica_kv_events_dropped_total (batches the full queue
    // dropped).
    common::metrics::counter& announce_kv_events(const std::string& endpoint,
                                                 const std::string& replay_endpoint);

    // lanes_replica_scheduler_info{max_num_seqs, max_num_batched_tokens} 1: the scheduler's
    // limits, which a router reads to know when a request would wait for a slot.
    void announce_scheduler(long max_num_seqs, long max_num_batched_tokens);

    common::metrics::gauge& running;
    common::metrics::gauge& waiting;
    common::metrics::gauge& kv_usage;
    common::metrics::counter& prefix_queries;
    common::metrics::counter& prefix_hits;
    common::metrics::counter& preemptions;
    common::metrics::counter& prompt_tokens;
    common::metrics::counter& generation_tokens;

private:
    common::metrics::family<common::metrics::counter>& success_family_;

public:
    common::metrics::histogram& ttft;
    common::metrics::histogram& itl;
    common::metrics::histogram& e2e;
    common::metrics::histogram& queue_time;
    // From a request's first scheduling to its first token (vLLM's PREFILL phase): with
    // prompt_tokens and prefix_hits, what a router fits its prefill cost model on.
    common::metrics::histogram& prefill_time;

    // vllm:request_success_total{finished_reason}: "stop", "length", "abort" or "error".
    common::metrics::counter& success(const std::string& finished_reason) {
        return success_family_.with({"0", finished_reason, model_});
    }
};

} // namespace lanes::replica
