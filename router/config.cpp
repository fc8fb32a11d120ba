// The router config's flags and how they are read (flags, then a --config file under them).
#include "router/config.hpp"

#include "common/http/server_flags.hpp"
#include "common/log.hpp"
#include "router/policies/factory.hpp"
#include "router/policies/policy_flags.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

namespace lanes::router {

namespace {

// The --help sections, in their order; in each, the flags most often set come first.
constexpr const char* listening_section = "Listening";
constexpr const char* limits_section = "Limits and admission";
constexpr const char* access_section = "Access and TLS";

// The level names common::log::parse_level reads (tests check that it reads each).
const std::vector<std::string> log_levels = {"debug", "info", "warn", "error"};

void add_listening_flags(common::flag_set& f, router_config& cfg) {
    f.section(listening_section);
    f.add("host", cfg.host, "address to listen on").value_name("HOST");
    f.add("port", cfg.port, "port to listen on (0 picks a free port and logs it)");
    f.add("threads", cfg.threads,
          "I/O threads (0 = the CPUs the process may use: affinity and cgroup CPU quota)");
}

void add_replica_flags(common::flag_set& f, router_config& cfg) {
    f.section("Replicas and discovery");
    f.add("replica", cfg.replicas, "replica base URL, e.g. http://127.0.0.1:8001")
        .value_name("URL");
    f.add("replica-dns", cfg.monitor.dns_names,
          "host:port resolved periodically; every address becomes a replica; https://host:port "
          "for TLS, each certificate checked for host")
        .value_name("HOST:PORT");
    f.add("dns-interval", cfg.monitor.dns_interval, "how often to re-resolve --replica-dns names");
    f.add("default-model", cfg.default_model,
          "model of a request that names none (default: the fleet's only model, if it has one)")
        .value_name("MODEL");
    f.add("replica-api-key", cfg.monitor.replica_api_key,
          "key for the replicas (Authorization: Bearer) on scrapes, probes, models reads, and "
          "requests that bring no Authorization of their own")
        .value_name("KEY");
    f.add("replica-api-key-file", cfg.replica_api_key_file,
          "file holding --replica-api-key (its first line)")
        .value_name("PATH");
    f.add("replace-client-auth", cfg.upstream.replace_client_auth,
          "send the replica key instead of a client's own Authorization");
    f.add("replica-ca", cfg.replica_ca,
          "PEM CA bundle that https:// replicas' certificates are checked against (default: the "
          "system's)")
        .value_name("PATH");
    f.add("replica-insecure-skip-verify", cfg.replica_insecure_skip_verify,
          "do not check https:// replicas' certificates at all (for tests only)");
    f.add("models-interval", cfg.monitor.models_interval,
          "how often to read replicas' /v1/models (the models each serves)");
    f.add("models-timeout", cfg.monitor.models_timeout, "timeout of one /v1/models read");
    f.add("models-refresh-gap", cfg.monitor.models_refresh_gap,
          "least time between two re-reads of every list for a request naming an unknown model");
    f.add("scrape-interval", cfg.monitor.scrape_interval, "how often to read replicas' /metrics");
    f.add("scrape-timeout", cfg.monitor.scrape_timeout, "timeout of one /metrics scrape");
    f.add("stale-after", cfg.stale_after, "ignore scraped replica metrics older than this");
    f.add("metrics-missing-interval", cfg.monitor.metrics_missing_interval,
          "how long before asking again a replica whose /metrics answered 404, 405 or 501");
    f.add("bytes-per-token", cfg.monitor.bytes_per_token,
          "prompt bytes per token assumed for engines that are not lanes replicas (block hashing)")
        .value_name("BYTES");
    f.add("max-idle-connections", cfg.upstream.max_idle_connections,
          "idle keep-alive connections per replica");
}

void add_routing_flags(common::flag_set& f, router_config& cfg) {
    f.section("Routing");
    f.add("policy", cfg.policy, "routing policy (docs/router.md)")
        .value_name("NAME")
        .choices(policy_names());
    f.add("block-size", cfg.block_size, "tokens per KV block used for prefix hashing")
        .value_name("TOKENS");
    add_policy_flags(f, cfg.policy_knobs);
    f.add("session-key-limit", cfg.session_key_limit,
          "session: longest session key (x-session-id, user, cookie) taken; longer names none")
        .value_name("BYTES");
    f.add("response-affinity-capacity", cfg.response_affinity_capacity,
          "/v1/responses ids remembered, to send continuations where their state is");
    f.add("tokenizer", cfg.local_tokenizer.directories,
          "a model's tokenizer directory (tokenizer.json, tokenizer_config.json), as DIR for "
          "every model or MODEL=DIR: chats rendered and prompts encoded in process, hashed in "
          "the engine's own token ids")
        .value_name("[MODEL=]DIR");
    f.add("tokenizer-cache-tokens", cfg.local_tokenizer.cache_tokens,
          "token ids of encoded text runs kept per tokenizer, so that a growing chat encodes "
          "only its new turn (0: none)");
    f.add("tokenize-endpoint", cfg.tokenizer.endpoint,
          "base URL of an engine whose POST /tokenize gives text prompts their token ids in the "
          "engine's vocabulary (chat template applied), so they hash as its KV events do; off "
          "when empty")
        .value_name("URL");
    f.add("tokenize-timeout", cfg.tokenizer.timeout,
          "how long one /tokenize may take (past it the request is routed on its text)");
    f.add("tokenize-cache-entries", cfg.tokenizer.cache_entries,
          "prompts whose token ids are kept (LRU; 0: none)");
    f.add("tokenize-max-tokens", cfg.tokenizer.max_tokens,
          "longest /tokenize answer used, in tokens");
    f.add("tokenize-max-values", cfg.tokenizer.max_values,
          "JSON values (arrays, objects and their elements) a request body may hold to be "
          "tokenized; a bigger one is routed on its text");
}

void add_health_flags(common::flag_set& f, router_config& cfg) {
    f.section("Health and retries");
    f.add("max-retries", cfg.max_retries,
          "extra attempts on other replicas for a request that failed before its first byte");
    f.add("retry-on", cfg.retry_on,
          "which failed attempts go to another replica, comma-separated: connect-failure, reset "
          "(closed before any byte), backpressure (429/503), 5xx, timeout (no first byte in "
          "time), broken-answer (cut, malformed, too big), or none")
        .value_name("LIST");
    f.add("connect-timeout", cfg.upstream.connect_timeout, "upstream connect timeout");
    f.add("first-byte-timeout", cfg.upstream.first_byte_timeout,
          "upstream time from request sent to response header, and from a stream's header to "
          "its first event");
    f.add("stream-idle-timeout", cfg.upstream.stream_idle_timeout,
          "longest silence between two upstream body chunks");
    f.add("upstream-write-timeout", cfg.upstream.write_timeout, "time to send a request upstream");
    f.add("health-interval", cfg.monitor.health_interval, "how often to probe replicas' /health");
    f.add("health-timeout", cfg.monitor.health_timeout, "timeout of one /health probe");
    f.add("failure-threshold", cfg.health.failure_threshold,
          "consecutive failures (connect errors, timeouts, 500/502/504, failed probes) that eject "
          "a replica");
    f.add("success-threshold", cfg.health.success_threshold,
          "consecutive successes that re-admit an ejected replica");
    f.add("eject-time", cfg.health.open_time, "how long an ejected replica waits before probing");
    f.add("max-ejection-percent", cfg.health.max_ejection_percent,
          "most of a model's replicas that failed requests or slow probes can eject (past it, "
          "the least recently failed stay routable); refused or failing probes eject "
          "regardless")
        .value_name("PERCENT");
    f.add("backpressure-backoff", cfg.backpressure_backoff,
          "how long a replica that answered 429 or 503 without Retry-After takes no request");
    f.add("max-backoff", cfg.max_backoff, "the longest backoff a replica's Retry-After can ask");
    f.add("retry-after", cfg.retry_after,
          "Retry-After of a 503 when no replica is routable (sent in whole seconds, rounded up)");
}

void add_limit_flags(common::flag_set& f, router_config& cfg) {
    f.section(limits_section);
    f.add("rate-limit-rps", cfg.rate.rps,
          "requests a second per key (or per client address without keys); 0: no limit");
    f.add("rate-limit-burst", cfg.rate.burst, "requests a client may send at once (0: the rps)");
    f.add("rate-limit-tpm", cfg.rate.tpm,
          "tokens a minute per key or address (prompt tokens plus max_tokens); 0: no limit");
    f.add("rate-limit-clients", cfg.rate.max_clients,
          "clients whose buckets are remembered (idle ones are forgotten first)");
    f.add("max-concurrent-requests", cfg.admission.max_concurrent,
          "requests of one model let through at once; the rest wait in the router's queue (0: "
          "no cap)");
    f.add("replica-max-inflight", cfg.replica_max_inflight,
          "requests in flight from this router at which a replica is full; when every replica "
          "of a model is, requests wait in the router's queue (0: no cap)");
    f.add("replica-queue-threshold", cfg.replica_queue_threshold,
          "waiting requests (from a replica's last scrape) at which it is full, likewise (0: not "
          "used)");
    f.add("queue-size", cfg.admission.queue_size,
          "requests that may wait in the router's queue (past it: 503 at once)");
    f.add("queue-size-per-client", cfg.admission.queue_per_client,
          "requests one client (API key, else address) may have waiting for one model (past it: "
          "503 at once; 0: only --queue-size bounds them)");
    f.add("queue-timeout", cfg.admission.queue_timeout,
          "longest wait in the router's queue (then 503 with Retry-After)");
    f.add("queue-affinity-wait", cfg.admission.affinity_wait,
          "how long a queued request holds out for the replica caching its prefix before it "
          "takes any replica with room (0: any at once)");
    f.add("queue-scan-depth", cfg.admission.scan_depth,
          "of each client's first N queued requests, the first whose replica has room goes "
          "(1: strictly in order)");
    f.add("queue-recheck", cfg.admission.recheck,
          "how often a waiting request looks for room no finished request announced");
    f.add("json-max-depth", cfg.json_max_depth,
          "deepest nesting of a request body the router reads");
    f.add("upstream-body-limit", cfg.upstream.body_limit,
          "largest non-streamed upstream body, and largest single chunk of a stream")
        .value_name("BYTES");
}

void add_access_flags(common::flag_set& f, router_config& cfg) {
    f.section(access_section);
    f.add("api-key-file", cfg.api_key_file,
          "client API keys, one 'KEY [NAME] [rps=N] [burst=N] [tpm=N]' a line (re-read on "
          "SIGHUP; LANES_API_KEYS adds comma-separated entries); none: the router is open")
        .value_name("PATH");
    f.add("isolate-cache-by-key", cfg.isolate_cache_by_key,
          "give each API key's requests a cache_salt of their own, so tenants share no cached "
          "prefix (closes the cache timing side channel, costs hit rate)");
    f.add("metrics-public", cfg.metrics_public, "serve /metrics without a key when keys are set");
    f.add("trusted-proxies", cfg.trusted_proxies,
          "addresses and networks whose X-Forwarded-For names the client (comma-separated)")
        .value_name("LIST");
    f.add("client-ipv6-prefix", cfg.client_ipv6_prefix,
          "without keys, an IPv6 client is its network of this many bits for rate limits and "
          "admission (1..128; 128: each address)")
        .value_name("BITS");
    f.add("admin-host", cfg.admin_host,
          "address of the admin listener (/admin, SGLang's worker API)")
        .value_name("HOST");
    f.add("admin-port", cfg.admin_port, "port of the admin listener (0 picks one and logs it)");
    f.add("admin-token", cfg.admin_token, "bearer token the admin API requires (reads and changes)")
        .value_name("TOKEN");
    f.add("admin-token-file", cfg.admin_token_file, "file whose first line is the admin token")
        .value_name("PATH");
    f.add("admin-insecure-loopback", cfg.admin_insecure_loopback,
          "without a token, let loopback clients change the fleet (with Content-Type: "
          "application/json)");
    f.add("admin-server-name", cfg.admin_server_names,
          "a host name the admin listener answers to besides IP addresses and localhost (others "
          "get 421: DNS rebinding)")
        .value_name("NAME");
    f.add("admin-max-connections", cfg.admin_max_connections,
          "connections the admin listener takes at once (past it new ones are closed)");
}

void add_kv_event_flags(common::flag_set& f, router_config& cfg) {
    f.section("KV events");
    f.add("kv-events", cfg.kv_events,
          "subscribe to replicas' KV-cache events (ZeroMQ, vLLM's format) and route on them");
    f.add("kv-events-port", cfg.kv_subscriber.port,
          "events port on each replica's host, for replicas that do not announce one (vLLM's "
          "--kv-events-config endpoint); 0: only announced ones");
    f.add("kv-events-replay-port", cfg.kv_subscriber.replay_port,
          "replay port on each replica's host that goes with --kv-events-port (0: none)");
    f.add("kv-events-topic", cfg.kv_subscriber.topic,
          "topic prefix subscribed to (empty: every topic)");
    f.add("kv-events-replay-timeout", cfg.kv_subscriber.replay_timeout,
          "how long a replay request may take before the replica is resynced");
    f.add("kv-events-warmup-timeout", cfg.kv_subscriber.warmup_timeout,
          "at start, how long /readiness waits for every replica's KV events to be joined "
          "(replayed or read from its dump) before it says ready anyway (0: no wait)");
    f.add("kv-events-pending-ttl", cfg.precise.pending_ttl,
          "how long blocks just routed count as held before the replica's events confirm them");
    f.add("kv-events-max-blocks", cfg.precise.max_blocks,
          "blocks one replica may claim in the precise index (past it: dropped, resynced)");
    f.add("kv-bootstrap-token", cfg.kv_subscriber.bootstrap_token,
          "bearer token of the replicas' block dump (their --kv-dump-token): a replica whose "
          "replay cannot reach back to its first batch is read whole from its "
          "/kv-events/blocks; without it such a replica stays approximate until its cache clears")
        .value_name("TOKEN");
    f.add("kv-bootstrap-token-file", cfg.kv_bootstrap_token_file,
          "file whose first line is the --kv-bootstrap-token")
        .value_name("PATH");
    f.add("kv-bootstrap-timeout", cfg.kv_subscriber.bootstrap_timeout,
          "how long one block dump may take");
    f.add("kv-bootstrap-max-bytes", cfg.kv_subscriber.bootstrap_max_bytes,
          "largest block dump read (past it the replica stays approximate)")
        .value_name("BYTES");
    f.add("kv-bootstrap-retry", cfg.kv_subscriber.bootstrap_retry,
          "least time between two block dumps of one replica");
}

void add_observability_flags(common::flag_set& f, router_config& cfg) {
    f.section("Observability");
    f.add("log-level", cfg.log_level, "least severe level logged")
        .value_name("LEVEL")
        .choices(log_levels);
    f.add("access-log", cfg.access_log,
          "log one line per request (refusals included, with their status and reason)");
    f.add("refusal-log-rate", cfg.refusal_log_rate,
          "access lines of refused requests a second, at most (past it they are counted, and "
          "the next line says how many were left out)");
    f.add("hit-ratio-window", cfg.monitor.hit_ratio_window,
          "trailing window of lanes_router_prefix_cache_hit_ratio, the fleet's hit rate");
    f.add("route-headers", cfg.upstream.route_headers,
          "send x-lanes-replica and x-lanes-route-reason on answers (they show clients the "
          "replicas' addresses, and whether a prefix was cached there)");
    f.add("ui-public", cfg.ui_public,
          "serve the live page (/ui, /ui/state) on the traffic port too (it names the replicas; "
          "without a key when keys are set); always on the admin listener");
    f.add("ui-decisions", cfg.ui_decisions, "latest routing decisions the live page keeps");
    f.add("log-queue-bytes", cfg.log_queue_bytes,
          "log lines held for the log's writer thread (past it lines are dropped and counted)")
        .value_name("BYTES");
}

} // namespace

common::flag_set make_flags(router_config& cfg) {
    common::flag_set f("lanes-router",
                       "Prefix-aware load balancer for data-parallel LLM inference replicas. "
                       "Flags may also come from a JSON file (--config); the command line wins.");
    add_listening_flags(f, cfg);
    add_replica_flags(f, cfg);
    add_routing_flags(f, cfg);
    add_health_flags(f, cfg);
    add_limit_flags(f, cfg);
    add_access_flags(f, cfg);
    add_kv_event_flags(f, cfg);
    add_observability_flags(f, cfg);
    common::http::add_server_flags(
        f, cfg.http,
        {.listening = listening_section, .limits = limits_section, .tls = access_section});
    f.section(listening_section);
    f.add("shutdown-delay", cfg.shutdown_delay,
          "after SIGTERM: readiness answers 503 at once, requests are taken this long, then drain");
    f.section("General");
    f.add("config", cfg.config_file, "JSON config file (flags given on the command line win)")
        .value_name("PATH");
    return f;
}

namespace {

// "line 3, column 5 (byte 27): syntax error while parsing ..." for a syntax error in `text`.
std::string describe_parse_error(std::string_view text, const nlohmann::json::parse_error& e) {
    // e.byte counts from 1 and names the last byte read (one past the end at end of input).
    const std::size_t at = std::min<std::size_t>(e.byte == 0 ? 0 : e.byte - 1, text.size());
    const std::string_view before = text.substr(0, at);
    const std::size_t line =
        1 + static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n'));
    const std::size_t newline = before.rfind('\n');
    const std::size_t line_start = newline == std::string_view::npos ? 0 : newline + 1;
    // nlohmann's text, less its "[json.exception...] parse error at ...: " prefix.
    std::string_view what = e.what();
    if (const auto colon = what.find(": ");
        what.find("parse error") != std::string_view::npos && colon != std::string_view::npos)
        what.remove_prefix(colon + 2);
    return "line " + std::to_string(line) + ", column " + std::to_string(at - line_start + 1) +
           " (byte " + std::to_string(at + 1) + "): " + std::string(what);
}

// Applies a JSON config file to `flags`; the problems found are appended to `errors`.
void apply_file(const std::string& path, common::flag_set& flags,
                std::vector<std::string>& errors) {
    std::ifstream in(path);
    if (!in) {
        errors.push_back("--config: cannot read '" + path + "'");
        return;
    }
    std::stringstream text;
    text << in.rdbuf();
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(text.str());
    } catch (const nlohmann::json::parse_error& e) {
        errors.push_back("--config: '" + path +
                         "' is not valid JSON: " + describe_parse_error(text.str(), e));
        return;
    }
    if (!doc.is_object()) {
        errors.push_back("--config: '" + path + "' holds a JSON " + doc.type_name() +
                         ", not an object of flags");
        return;
    }
    for (const auto& [key, value] : doc.items()) {
        std::string name = key;
        std::replace(name.begin(), name.end(), '_', '-');
        if (name == "replicas")
            name = "replica";
        if (name == "config") {
            errors.push_back("--config: a config file cannot name another config file");
            continue;
        }
        const auto values = value.is_array() ? value : nlohmann::json::array({value});
        for (const auto& v : values) {
            std::string text_value;
            if (v.is_string())
                text_value = v.get<std::string>();
            else if (v.is_boolean() || v.is_number())
                text_value = v.dump();
            else {
                errors.push_back("--config: '" + key + "' must be a string, number or boolean");
                continue;
            }
            if (auto e = flags.apply(name, text_value); !e.empty())
                errors.push_back("--config: " + e);
        }
    }
}

} // namespace

namespace {

// What the config's fields imply for others: the replica key from its file, the header it is
// sent as, the fleet's default block size.
void derive(router_config& cfg, std::vector<std::string>& errors) {
    if (!cfg.replica_api_key_file.empty() && !cfg.monitor.replica_api_key.empty())
        errors.push_back("give --replica-api-key or --replica-api-key-file, not both");
    else if (!cfg.replica_api_key_file.empty()) {
        std::ifstream in(cfg.replica_api_key_file);
        std::string key;
        const bool read = in && std::getline(in, key);
        while (!key.empty() && (key.back() == '\r' || key.back() == ' ' || key.back() == '\t'))
            key.pop_back();
        if (!read)
            errors.push_back("--replica-api-key-file: cannot read '" + cfg.replica_api_key_file +
                             "'");
        else if (key.empty())
            errors.push_back("--replica-api-key-file: '" + cfg.replica_api_key_file +
                             "' holds no key on its first line");
        cfg.monitor.replica_api_key = key;
    }
    if (!cfg.monitor.replica_api_key.empty())
        cfg.upstream.replica_authorization = "Bearer " + cfg.monitor.replica_api_key;
    if (auto policy = retry_policy::parse(cfg.retry_on))
        cfg.retry = *policy;
    cfg.monitor.default_block_size =
        static_cast<std::size_t>(std::max<std::int64_t>(1, cfg.block_size));
}

} // namespace

std::vector<std::string> load_config(int argc, const char* const* argv, router_config& cfg,
                                     bool& help, std::string& usage) {
    router_config from_cli;
    common::flag_set cli_flags = make_flags(from_cli);
    std::vector<std::string> errors = cli_flags.parse(argc, argv);
    usage = cli_flags.requested_text();
    help = !usage.empty();
    if (from_cli.config_file.empty()) {
        cfg = from_cli;
        derive(cfg, errors);
        return errors;
    }
    // File first, then the command line again on top of it (its errors, already in `errors`,
    // come again and are not repeated): the file's problems are reported with the command
    // line's, not on the next run.
    cfg = router_config{};
    common::flag_set flags = make_flags(cfg);
    std::vector<std::string> file_errors;
    apply_file(from_cli.config_file, flags, file_errors);
    (void)flags.parse(argc, argv);
    file_errors.insert(file_errors.end(), errors.begin(), errors.end());
    derive(cfg, file_errors);
    return file_errors;
}

} // namespace lanes::router
