#include "router/metrics.hpp"

#include <algorithm>
#include <vector>

namespace lanes::router {

namespace {

// Request latency: from 1 ms (a refusal) to 10 minutes (a long generation).
const std::vector<double> duration_buckets = {0.001, 0.005, 0.01,  0.025, 0.05, 0.1,
                                              0.25,  0.5,   1.0,   2.5,   5.0,  10.0,
                                              30.0,  60.0,  120.0, 300.0, 600.0};
// Routing decision time: 1 µs .. 10 ms.
const std::vector<double> decision_buckets = {1e-06,  2.5e-06, 5e-06,  1e-05, 2.5e-05, 5e-05,
                                              0.0001, 0.00025, 0.0005, 0.001, 0.0025,  0.01};
// Rendering and encoding in process: 5 µs .. 50 ms.
const std::vector<double> local_tokenize_buckets = {5e-06,  1e-05, 2.5e-05, 5e-05, 0.0001, 0.00025,
                                                    0.0005, 0.001, 0.0025,  0.005, 0.01,   0.05};
// A /tokenize round trip: 50 µs .. 1 s.
const std::vector<double> tokenize_buckets = {5e-05, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                              0.01,  0.025,  0.05,    0.1,    0.25,  1.0};

} // namespace

router_metrics::router_metrics()
    : requests(registry_.add_counter(
          "lanes_router_requests_total",
          "Requests answered, by replica, HTTP status, route reason and model.",
          {"replica", "code", "reason", "model"}))
    , errors(registry_.add_counter("lanes_router_errors_total",
                                   "Requests that failed in the router, by kind.", {"kind"}))
    , retries(registry_
                  .add_counter("lanes_router_retries_total",
                               "Attempts repeated on another replica before any byte was sent.")
                  .with({}))
    , ejections(registry_.add_counter("lanes_router_ejections_total",
                                      "Times a replica was taken out of routing as unhealthy.",
                                      {"replica"}))
    , backpressure(registry_.add_counter(
          "lanes_router_backpressure_total",
          "Answers of 429 or 503 from a replica, which then backs off (load, not failure).",
          {"replica"}))
    , duration(registry_
                   .add_histogram("lanes_router_request_duration_seconds",
                                  "Time from request received to response complete.",
                                  duration_buckets)
                   .with({}))
    , first_byte(registry_
                     .add_histogram("lanes_router_time_to_first_byte_seconds",
                                    "Time from request received to the first upstream body byte.",
                                    duration_buckets)
                     .with({}))
    , decision(registry_
                   .add_histogram("lanes_router_routing_decision_seconds",
                                  "Time to parse, hash and pick a replica for one request.",
                                  decision_buckets)
                   .with({}))
    , predicted_hit_tokens(
          registry_
              .add_counter("lanes_router_predicted_prefix_hit_tokens_total",
                           "Prompt tokens the routing policy expected to be cached on the chosen "
                           "replica.")
              .with({}))
    , predicted_query_tokens(
          registry_
              .add_counter("lanes_router_predicted_prefix_query_tokens_total",
                           "Prompt tokens of routed requests (the denominator of the predicted "
                           "hit rate).")
              .with({}))
    , ideal_hit_tokens(
          registry_
              .add_counter("lanes_router_ideal_prefix_hit_tokens_total",
                           "Prompt tokens one LRU cache as large as every replica's KV cache "
                           "together would have held, over this router's requests (the ideal "
                           "hit rate's numerator).")
              .with({}))
    , replica_prefix_hits(registry_.add_counter(
          "lanes_router_replica_prefix_cache_hits_total",
          "Prefix-cache hit tokens reported by each replica's /metrics (mirrored).", {"replica"}))
    , replica_prefix_queries(registry_.add_counter(
          "lanes_router_replica_prefix_cache_queries_total",
          "Prefix-cache query tokens reported by each replica's /metrics (mirrored).", {"replica"}))
    , prefix_hit_ratio(registry_
                           .add_gauge("lanes_router_prefix_cache_hit_ratio",
                                      "The fleet's prefix-cache hit rate over the last "
                                      "--hit-ratio-window (60s): the replicas' own hit tokens "
                                      "over their query tokens, as mirrored in "
                                      "lanes_router_replica_prefix_cache_*; updated at each "
                                      "scrape, NaN while nothing was queried.")
                           .with({}))
    , replica_up(registry_.add_gauge("lanes_router_replica_up",
                                     "1 when the replica is healthy, else 0.", {"replica"}))
    , replica_draining(registry_.add_gauge("lanes_router_replica_draining",
                                           "1 when the replica is draining, else 0.", {"replica"}))
    , replica_inflight(registry_.add_gauge(
          "lanes_router_replica_inflight",
          "Requests in flight to the replica, counted by the router.", {"replica"}))
    , replica_kv_usage(registry_.add_gauge("lanes_router_replica_kv_usage_ratio",
                                           "KV-cache usage (0..1) from the replica's last scrape.",
                                           {"replica"}))
    , replica_waiting(registry_.add_gauge("lanes_router_replica_waiting_requests",
                                          "Waiting requests from the replica's last scrape.",
                                          {"replica"}))
    , replica_running(registry_.add_gauge("lanes_router_replica_running_requests",
                                          "Running requests from the replica's last scrape.",
                                          {"replica"}))
    , key_requests(registry_.add_counter(
          "lanes_router_api_key_requests_total",
          "Requests answered, by API key name (never the key) and HTTP status; only with keys.",
          {"key", "code"}))
    , access_refusals(registry_.add_counter(
          "lanes_router_access_refusals_total",
          "Requests refused by access control, by reason: invalid_api_key, rate_limit_requests, "
          "rate_limit_tokens.",
          {"reason"}))
    , queue_depth(registry_
                      .add_gauge("lanes_router_queue_depth",
                                 "Requests waiting in the router's admission queue.")
                      .with({}))
    , queue_wait(registry_
                     .add_histogram("lanes_router_queue_wait_seconds",
                                    "Time admitted requests waited in the router's queue.",
                                    duration_buckets)
                     .with({}))
    , queue_rejections(registry_.add_counter(
          "lanes_router_queue_rejections_total",
          "Requests the admission queue let go unserved: full, timeout, client_gone.", {"reason"}))
    , client_connections(registry_
                             .add_gauge("lanes_router_client_connections",
                                        "Client connections open on the traffic listener.")
                             .with({}))
    , refused_connections(
          registry_
              .add_counter("lanes_router_client_connections_refused_total",
                           "Client connections closed at once because --max-connections were "
                           "open.")
              .with({}))
    , kv_event_batches(registry_.add_counter("lanes_router_kv_event_batches_total",
                                             "KV-event batches applied, per replica.", {"replica"}))
    , kv_event_gaps(registry_.add_counter(
          "lanes_router_kv_event_gaps_total",
          "Sequence gaps in a replica's KV events: replayed (filled) or resync (entries dropped).",
          {"replica", "outcome"}))
    , kv_event_errors(registry_.add_counter("lanes_router_kv_event_errors_total",
                                            "KV-event batches that did not decode.", {"replica"}))
    , kv_event_live(registry_.add_gauge(
          "lanes_router_kv_events_live",
          "1 while a replica's precise index is complete and routed on, else 0.", {"replica"}))
    , kv_bootstraps(registry_.add_counter(
          "lanes_router_kv_bootstraps_total",
          "Block dumps read from a replica to start its precise index: ok, or why not (refused, "
          "failed, undecodable).",
          {"replica", "outcome"}))
    , tokenize(registry_.add_counter(
          "lanes_router_tokenize_total",
          "Requests given the engine's token ids: local (--tokenizer, in process), cached (from "
          "the --tokenize-endpoint LRU), fetched, failed (routed on their text), skipped "
          "(token-id prompts, batches).",
          {"outcome"}))
    , tokenize_seconds(registry_
                           .add_histogram("lanes_router_tokenize_seconds",
                                          "Time of one /tokenize round trip (LRU misses).",
                                          tokenize_buckets)
                           .with({}))
    , local_tokenize_seconds(
          registry_
              .add_histogram("lanes_router_local_tokenize_seconds",
                             "Time to render and encode one request in process (--tokenizer).",
                             local_tokenize_buckets)
              .with({})) {}

std::string router_metrics::expose(const std::vector<replica_reading>& replicas) {
    std::lock_guard lock(expose_mutex_);
    // The per-replica gauges of replicas no longer in the pool go.
    const auto present = [&replicas](const common::metrics::label_values& v) {
        return std::any_of(replicas.begin(), replicas.end(),
                           [&v](const replica_reading& r) { return r.id == v.front(); });
    };
    for (auto* g : {&replica_up, &replica_draining, &replica_inflight, &replica_kv_usage,
                    &replica_waiting, &replica_running, &kv_event_live})
        g->retain(present);
    // Their counters go too (the router would otherwise keep every replica it ever saw, as
    // DNS names churn): the request counter's "none" (answered by the router) stays.
    const auto present_or_none = [&present](const common::metrics::label_values& v) {
        return v.front() == "none" || present(v);
    };
    for (auto* c :
         {&requests, &ejections, &backpressure, &replica_prefix_hits, &replica_prefix_queries,
          &kv_event_batches, &kv_event_gaps, &kv_event_errors, &kv_bootstraps})
        c->retire(present_or_none);
    for (const replica_reading& r : replicas) {
        const std::vector<std::string> label{r.id};
        replica_up.with(label).set(r.up ? 1.0 : 0.0);
        replica_draining.with(label).set(r.draining ? 1.0 : 0.0);
        replica_inflight.with(label).set(static_cast<double>(r.inflight));
        if (r.kv_usage)
            replica_kv_usage.with(label).set(*r.kv_usage);
        if (r.waiting)
            replica_waiting.with(label).set(static_cast<double>(*r.waiting));
        if (r.running)
            replica_running.with(label).set(static_cast<double>(*r.running));
    }
    if (read_queue_depth_)
        queue_depth.set(static_cast<double>(read_queue_depth_()));
    if (read_connections_) {
        const connection_counts c = read_connections_();
        client_connections.set(static_cast<double>(c.open));
        refused_connections.inc(static_cast<double>(c.refused) - refused_connections.value());
    }
    return registry_.expose();
}

} // namespace lanes::router
