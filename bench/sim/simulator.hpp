// lanes-bench simulate's engine: replays a workload through N simulated replicas (sim_replica:
// the replica's real scheduler, block manager and prefix cache on the sim backend's cost model)
// and one routing policy, on a virtual clock, in one thread and without sockets. The router's side
// is modelled as the live router runs it: its own in-flight count per replica, and the replicas'
// load (KV usage, queue, running) as last scraped, every scrape interval, left out when older than
// stale_after. Clients follow lanes-bench's loops (bench/runner.cpp): closed loop at a
// concurrency, Poisson arrivals (the same seeded draws), or the trace's timestamps; a stream's
// turns go one after another. Every figure it gives is modelled ("sim"), not measured.
#pragma once

#include "bench/sim/sim_policy.hpp"
#include "bench/sim/sim_replica.hpp"
#include "bench/workload.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <memory>
#include <vector>

namespace lanes::bench::sim {

struct sim_config {
    std::size_t replicas = 4;
    replica_model replica;
    double scrape_interval_s = 0.1; // the router's --scrape-interval (a peer may bring its own)
    double stale_after_s = 2.0;     // the router's --stale-after
    std::int64_t concurrency = 8;   // closed loop: streams in flight
    double rate = 0;                // > 0: Poisson arrivals of streams per second
    bool trace_times = false;       // arrivals at the workload's timestamps
    // With rate: each Poisson arrival is one request, the next turn of the session whose think
    // time ended longest ago, or else the next session's first turn (the skewed workloads: the
    // load is the request rate, whatever the sessions' lengths).
    bool session_arrivals = false;
    double continue_share = 0.85;      // of arrivals that find a session ready
    std::uint64_t seed = 1;            // arrivals (as lanes-bench's)
    double kv_sample_interval_s = 1.0; // KV usage over time: one sample per this much time
    bool report_num_blocks = true; // the scrape carries each replica's KV capacity and max_num_seqs
    std::size_t text_block_bytes = 16; // the router's hash block (lanes replicas: block_size)
    // From a client's send to the request's arrival in the replica's queue: the HTTP path through
    // router and replica, and the client's turn-around (the replica starts its next step without
    // waiting for it). 0.6 ms: lanes-bench through lanes-router to one idle sim replica on
    // loopback, TTFT of a 17-token prompt against its modelled prefill step (2026-12-02).
    double path_latency_s = 0.0006;
    // KV events: the replicas publish their prefix caches' events (BlockStored, BlockRemoved,
    // as lanes replicas and vLLM with --kv-events-config do), each step's batch applied to this
    // index kv_event_delay_s after the step ends (the publisher's and subscriber's path). The
    // policy under test reads the same index. Null: no replica publishes.
    std::shared_ptr<router::precise_index> kv_events;
    double kv_event_delay_s = 0.001;
    // Where the virtual clock stands, written before each event (what a lanes policy's clock
    // reads); may be null.
    std::shared_ptr<double> clock;
    // The report lists every request (its replica, the cache it found there against the best
    // any replica had, the requests in flight there before it, the policy's reason, TTFT, e2e).
    bool per_request = false;
};

// A policy clock that reads `seconds` (sim_config::clock) as a steady_clock time point.
router::clock_fn virtual_clock(std::shared_ptr<const double> seconds);

// Runs the workload to its end under `policy`; the report (JSON) holds the fleet's hit rate and
// its ideals, throughput, TTFT and e2e percentiles, imbalance, route reasons and KV usage over
// time, in lanes-bench's report's field names where they exist.
nlohmann::json simulate(const sim_config& cfg, const std::vector<stream>& workload,
                        sim_policy& policy);

} // namespace lanes::bench::sim
