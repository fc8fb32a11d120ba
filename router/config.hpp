// lanes-router's one config struct: every limit, timeout and threshold of the router is a field
// here, filled from flags and an optional JSON config file, validated in one place.
#pragma once

#include "router/fleet/kv_subscriber.hpp"
#include "router/fleet/precise_index.hpp"
#include "router/request/remote_tokenizer.hpp"

#include "common/config_util.hpp"
#include "common/http/server.hpp"
#include "common/log.hpp"
#include "router/access/admission.hpp"
#include "router/access/rate_limit.hpp"
#include "router/fleet/health.hpp"
#include "router/policies/factory.hpp"
#include "router/retry_policy.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace lanes::router {

// Talking to replicas: the proxy's attempts, and the monitor's connections.
struct upstream_config {
    common::http::duration connect_timeout{2'000};
    common::http::duration first_byte_timeout{300'000}; // request sent -> response header
    common::http::duration stream_idle_timeout{60'000}; // between two upstream body chunks
    common::http::duration write_timeout{10'000};       // sending a request
    std::int64_t max_idle_connections = 64;             // kept per replica
    std::size_t body_limit = 16 * 1024 * 1024;          // a non-streamed body; one streamed chunk
    // Credentials for the replicas ("Bearer KEY", from --replica-api-key): sent on a request
    // that carries none of its own, and in place of the client's with replace_client_auth.
    std::string replica_authorization;
    bool replace_client_auth = false;
    // x-lanes-replica and x-lanes-route-reason on answers (x-request-id is always sent). Off by
    // default: they show clients the fleet's addresses, and whether a prefix was cached.
    bool route_headers = false;
};

// The background work on the replica set (router/fleet/replica_monitor.hpp).
struct monitor_config {
    common::http::duration scrape_interval{100};
    common::http::duration scrape_timeout{1'000};
    // A replica whose /metrics answered 404, 405 or 501 has no metrics (SGLang without
    // --enable-metrics, llama.cpp without --metrics): asked again only after this long.
    common::http::duration metrics_missing_interval{30'000};
    common::http::duration health_interval{1'000};
    common::http::duration health_timeout{1'000};
    common::http::duration dns_interval{5'000};
    std::vector<std::string> dns_names; // host:port names re-resolved every dns_interval
    // How often each replica's /v1/models is read (which models it serves, whether it is a
    // lanes replica), and the most time one read may take.
    common::http::duration models_interval{5'000};
    common::http::duration models_timeout{2'000};
    // A request for a model no replica is known to serve reads every replica's list again before
    // its 404, but not more often than this (so bogus names cannot make the router hammer them).
    common::http::duration models_refresh_gap{1'000};
    // Sent as "Authorization: Bearer" on scrapes, probes and models reads (a vLLM --api-key).
    std::string replica_api_key;
    // The fleet's hashing units (replica_pool::update_fleet): the block size of a replica that
    // reports none, and the bytes a text token takes on average for engines that are not lanes'.
    std::size_t default_block_size = 16;
    std::size_t bytes_per_token = 4;
};

struct router_config {
    std::string host = "0.0.0.0";
    unsigned short port = 8000;
    std::vector<std::string> replicas; // http://host:port
    std::string policy = "prefix";
    // The model of a request that names none (else the fleet's only model, when it has one).
    std::string default_model;
    std::string config_file;
    // Client API keys (access/api_keys.hpp): a file, re-read on SIGHUP, and/or LANES_API_KEYS
    // (api_keys_env, read from the environment by main, not a flag).
    std::string api_key_file;
    std::string api_keys_env;
    bool metrics_public = false;       // /metrics without a key when keys are configured
    bool isolate_cache_by_key = false; // a cache_salt per key (access/cache_salt.hpp)
    bool ui_public = false; // the live page (/ui) on the traffic port too, not only the admin one
    std::size_t ui_decisions = 50; // latest routing decisions the live page lists
    rate_settings rate;            // the default limits; a key's own win (access/rate_limit.hpp)
    // Admission control (access/admission.hpp); a replica is at its cap with replica_max_inflight
    // requests in flight from this router, or replica_queue_threshold waiting in its last scrape
    // (0: not used).
    admission_settings admission;
    std::int64_t replica_max_inflight = 0;
    std::int64_t replica_queue_threshold = 0;
    // Peers whose X-Forwarded-For is believed, comma-separated addresses and networks.
    std::string trusted_proxies;
    // The admin listener (admin.hpp): its own address, never the traffic port's.
    std::string admin_host = "127.0.0.1";
    unsigned short admin_port = 8090;
    std::string admin_token;
    std::string admin_token_file;
    bool admin_insecure_loopback = false;   // mutations from loopback peers without a token
    std::size_t admin_max_connections = 16; // client connections the admin listener takes
    std::int64_t threads = 0;               // I/O threads; 0 = number of cores
    std::int64_t block_size = 16; // tokens per block for prefix hashing (the replicas' block size)
    std::string log_level = "info";
    std::size_t log_queue_bytes =
        common::log::default_queue_bytes; // log lines held for the writer thread
    bool access_log = true;

    upstream_config upstream;
    std::int64_t max_retries = 2; // extra attempts on other replicas before any byte
    // Which failures are retried (retry_policy.hpp); `retry` is what retry_on names.
    std::string retry_on = std::string(retry_policy::default_names);
    retry_policy retry;
    common::http::duration retry_after{1'000}; // Retry-After of a 503 when no replica is routable
    // A replica that answered 429 or 503 takes no request for its Retry-After, or this long when
    // it gave none; never longer than max_backoff.
    common::http::duration backpressure_backoff{1'000};
    common::http::duration max_backoff{60'000};
    std::size_t json_max_depth = 64; // nesting of a request body the router reads
    // A session key longer than this (x-session-id, user, cookie) names no session.
    std::size_t session_key_limit = 1024;
    // Response ids remembered for /v1/responses continuations (the least recently used go first).
    std::size_t response_affinity_capacity = 100'000;
    // After SIGTERM: /readiness answers 503 at once, requests are still taken this long (so load
    // balancers notice), then the router drains.
    common::http::duration shutdown_delay{0};
    std::string replica_api_key_file;
    // https replicas: the CA bundle their certificates are checked against ("" = the system's),
    // or no check at all (tests only).
    std::string replica_ca;
    bool replica_insecure_skip_verify = false;
    // KV events: subscribe to the replicas that publish them (announced in their metrics, or on
    // kv_events_port), and route on their word.
    bool kv_events = true;
    kv_subscriber_config kv_subscriber;
    std::string kv_bootstrap_token_file; // read into kv_subscriber.bootstrap_token at start
    // The engine's token ids for text prompts, from its /tokenize (request/remote_tokenizer).
    tokenizer_settings tokenizer;
    precise_index_settings precise;

    // Replica state.
    common::http::duration stale_after{2'000}; // scraped values older than this are ignored
    monitor_config monitor;                    // scrape, health-check and DNS
    health_config health;                      // circuit-breaker thresholds
    policy_options policy_knobs;               // thresholds of the routing policies

    common::http::server_config http;
};

common::flag_set make_flags(router_config& cfg);
// Flags, then the --config file (a JSON object whose keys are flag names, e.g.
// {"policy": "prefix", "replica": ["http://127.0.0.1:8001"], "connect-timeout": "2s"}), with
// command-line flags winning. Returns every problem found; sets `help` when --help was given.
std::vector<std::string> load_config(int argc, const char* const* argv, router_config& cfg,
                                     bool& help, std::string& usage);
// Every problem with a parsed config (empty when valid).
std::vector<std::string> validate(const router_config& cfg);

} // namespace lanes::router
