// What the proxy reads of the router's config: its traffic front (keys, limits, admission, the
// live page), the retry loop and its backoffs, the replicas' connections, and the parts of the
// monitor's, the circuit breaker's and the policies' settings it consults. router_config
// (router/config.hpp) is this plus the listeners, threads, logs and the KV-event subscriber.
#pragma once

#include "common/http/message.hpp"
#include "router/access/admission.hpp"
#include "router/access/rate_limit.hpp"
#include "router/fleet/health.hpp"
#include "router/fleet/replica_monitor.hpp"
#include "router/fleet/upstream_config.hpp"
#include "router/policies/factory.hpp"
#include "router/proxy/retry_policy.hpp"
#include "router/request/local_tokenizer.hpp"
#include "router/request/remote_tokenizer.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace lanes::router {

struct proxy_config {
    // The model of a request that names none (else the fleet's only model, when it has one).
    std::string default_model;
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
    // Bits of an IPv6 client's address that name it for rate limits and admission (its /64).
    std::size_t client_ipv6_prefix = 64;
    // The admin API's credentials (admin.hpp).
    std::string admin_token;
    bool admin_insecure_loopback = false; // mutations from loopback peers without a token
    // Host names the admin listener answers to besides IP literals and localhost (a request
    // naming any other host is refused: DNS rebinding).
    std::vector<std::string> admin_server_names;
    bool access_log = true;
    // Access lines for refused requests (4xx and 5xx the router answers itself) a second, at
    // most; past it they are counted and the next line says how many were left out.
    double refusal_log_rate = 20;

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
    // The engine's token ids for text prompts, from its /tokenize (request/remote_tokenizer).
    tokenizer_settings tokenizer;
    // The engine's token ids computed in process (request/local_tokenizer).
    local_tokenizer_settings local_tokenizer;

    // Replica state.
    common::http::duration stale_after{2'000}; // scraped values older than this are ignored
    monitor_config monitor;                    // scrape, health-check and DNS
    health_config health;                      // circuit-breaker thresholds
    policy_options policy_knobs;               // thresholds of the routing policies
};

} // namespace lanes::router
