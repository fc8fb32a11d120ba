// lanes-router's one config struct: every limit, timeout and threshold of the router is a field
// here, filled from flags and an optional JSON config file, validated in one place.
#pragma once

#include "common/config_util.hpp"
#include "common/http/server.hpp"
#include "router/fleet/health.hpp"
#include "router/policies/factory.hpp"

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
};

struct router_config {
    std::string host = "0.0.0.0";
    unsigned short port = 8000;
    std::vector<std::string> replicas; // http://host:port
    std::string policy = "prefix";
    std::string config_file;
    std::string admin_token;
    std::int64_t threads = 0;     // I/O threads; 0 = number of cores
    std::int64_t block_size = 16; // tokens per block for prefix hashing (the replicas' block size)
    std::string log_level = "info";
    bool access_log = true;

    upstream_config upstream;
    std::int64_t max_retries = 2;              // extra attempts on other replicas before any byte
    common::http::duration retry_after{1'000}; // Retry-After of a 503 when no replica is routable

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
