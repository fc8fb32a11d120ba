// lanes-router's one config struct: every limit, timeout and threshold of the router is a field
// here, filled from flags and an optional JSON config file, validated in one place.
#pragma once

#include "common/config_util.hpp"
#include "common/http/server.hpp"
#include "common/log.hpp"
#include "router/fleet/kv_subscriber.hpp"
#include "router/index/precise_index.hpp"
#include "router/proxy/proxy_config.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace lanes::router {

// The proxy's part (proxy/proxy_config.hpp), then the rest.
struct router_config : proxy_config {
    std::string host = "0.0.0.0";
    unsigned short port = 8000;
    std::vector<std::string> replicas; // http://host:port
    std::string policy = "prefix";
    std::string config_file;
    // The admin listener (admin.hpp): its own address, never the traffic port's.
    std::string admin_host = "127.0.0.1";
    unsigned short admin_port = 8090;
    std::string admin_token_file;           // read into admin_token at start
    std::size_t admin_max_connections = 16; // client connections the admin listener takes
    std::int64_t threads = 0;               // I/O threads; 0 = number of cores
    std::int64_t block_size = 16; // tokens per block for prefix hashing (the replicas' block size)
    std::string log_level = "info";
    std::size_t log_queue_bytes =
        common::log::default_queue_bytes; // log lines held for the writer thread

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
    precise_index_settings precise;

    common::http::server_config http;
};

common::flag_set make_flags(router_config& cfg);
// Flags, then the --config file (a JSON object whose keys are flag names, e.g.
// {"policy": "prefix", "replica": ["http://127.0.0.1:8001"], "connect-timeout": "2s"}), with
// command-line flags winning. Returns every problem found; sets `help` when --help or --version
// was given, with what to print (the usage or the version line) in `usage`.
std::vector<std::string> load_config(int argc, const char* const* argv, router_config& cfg,
                                     bool& help, std::string& usage);
// Every problem with a parsed config (empty when valid).
std::vector<std::string> validate(const router_config& cfg);
// After validate: the secrets that come from files and the environment (the admin token, the
// KV bootstrap token, LANES_API_KEYS), and the rule that needs them (--isolate-cache-by-key
// needs API keys). Every problem found.
std::vector<std::string> read_secrets(router_config& cfg);

} // namespace lanes::router
