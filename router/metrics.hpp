// Every lanes_router_* metric, declared in one place with its help text.
#pragma once

#include "common/metrics/registry.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace lanes::router {

// One replica as the per-replica gauges show it (status_pages reads them from the pool).
struct replica_reading {
    std::string id;
    bool up = false;
    bool draining = false;
    std::int64_t inflight = 0;
    std::optional<double> kv_usage;
    std::optional<std::int64_t> waiting;
    std::optional<std::int64_t> running;
};

// Seconds from `t` to now, as duration histograms take them.
inline double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

class router_metrics {
    common::metrics::registry registry_; // first: the references below point into it

public:
    router_metrics();

    // Refreshes the per-replica gauges from `replicas` (the pool's now), then writes the
    // exposition. Only expose() touches the per-replica gauge families (replica_up ...
    // replica_running): it drops the children of replicas no longer there, so nothing else may
    // hold references to them.
    std::string expose(const std::vector<replica_reading>& replicas);

    common::metrics::family<common::metrics::counter>& requests; // replica, code, reason, model
    common::metrics::family<common::metrics::counter>& errors;   // kind
    common::metrics::counter& retries;
    common::metrics::family<common::metrics::counter>& ejections;    // replica
    common::metrics::family<common::metrics::counter>& backpressure; // replica
    common::metrics::histogram& duration;
    common::metrics::histogram& first_byte;
    common::metrics::histogram& decision;
    common::metrics::counter& predicted_hit_tokens;
    common::metrics::counter& predicted_query_tokens;
    common::metrics::counter& ideal_hit_tokens;
    common::metrics::family<common::metrics::counter>& replica_prefix_hits;    // replica
    common::metrics::family<common::metrics::counter>& replica_prefix_queries; // replica
    common::metrics::gauge& prefix_hit_ratio; // the fleet's, over the monitor's window
    common::metrics::family<common::metrics::gauge>& replica_up;
    common::metrics::family<common::metrics::gauge>& replica_draining;
    common::metrics::family<common::metrics::gauge>& replica_inflight;
    common::metrics::family<common::metrics::gauge>& replica_kv_usage;
    common::metrics::family<common::metrics::gauge>& replica_waiting;
    common::metrics::family<common::metrics::gauge>& replica_running;
    common::metrics::family<common::metrics::counter>& key_requests;    // key, code
    common::metrics::family<common::metrics::counter>& access_refusals; // reason
    common::metrics::gauge& queue_depth;
    common::metrics::histogram& queue_wait;
    common::metrics::family<common::metrics::counter>& queue_rejections; // reason
    common::metrics::gauge& client_connections;
    common::metrics::counter& refused_connections;
    common::metrics::family<common::metrics::counter>& kv_event_batches; // replica
    common::metrics::family<common::metrics::counter>& kv_event_gaps;    // replica, outcome
    common::metrics::family<common::metrics::counter>& kv_event_errors;  // replica
    common::metrics::family<common::metrics::gauge>& kv_event_live;      // replica
    common::metrics::family<common::metrics::counter>& kv_bootstraps;    // replica, outcome
    common::metrics::family<common::metrics::counter>& tokenize;         // outcome
    common::metrics::histogram& tokenize_seconds;
    common::metrics::histogram& local_tokenize_seconds;

    // The client listener's counts, read at each expose(): open connections and those closed at
    // once for --max-connections since start. Set once, before the listener serves.
    struct connection_counts {
        std::size_t open = 0;
        std::uint64_t refused = 0;
    };
    void read_connections_from(std::function<connection_counts()> read) {
        read_connections_ = std::move(read);
    }

    // The admission queue's depth, read at each expose().
    void read_queue_depth_from(std::function<std::size_t()> read) {
        read_queue_depth_ = std::move(read);
    }

private:
    std::function<connection_counts()> read_connections_;
    std::function<std::size_t()> read_queue_depth_;
    // One expose() at a time: the per-replica gauges are dropped and set again from the pool,
    // and two scrapes on two threads that saw the pool apart would set a child the other drops.
    std::mutex expose_mutex_;
};

} // namespace lanes::router
