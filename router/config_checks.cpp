// The router config's checks (validate) and its secrets (read_secrets), declared with the config
// in router/config.hpp: every problem found is listed, none stops the search.
#include "router/config.hpp"

#include "common/access/secret.hpp"
#include "common/http/server_flags.hpp"
#include "common/http/url.hpp"
#include "router/access/client_address.hpp"
#include "router/policies/factory.hpp"
#include "router/policies/policy_flags.hpp"

#include <charconv>
#include <cstdlib>
#include <string>
#include <vector>

namespace lanes::router {

std::vector<std::string> validate(const router_config& cfg) {
    std::vector<std::string> errors;
    auto need = [&](bool ok, std::string message) {
        if (!ok)
            errors.push_back(std::move(message));
    };
    if (!make_policy(cfg.policy, {})) {
        std::string known;
        for (const auto& n : policy_names())
            known += (known.empty() ? "" : ", ") + n;
        errors.push_back("--policy '" + cfg.policy + "' is unknown; choose one of: " + known);
    }
    for (const auto& r : cfg.replicas) {
        std::string why;
        if (!common::http::parse_url(r, &why))
            errors.push_back("--replica: " + why);
    }
    need(cfg.threads >= 0 && cfg.threads <= 256, "--threads must be in 0..256");
    need(cfg.block_size >= 1 && cfg.block_size <= 256, "--block-size must be in 1..256");
    need(cfg.max_retries >= 0 && cfg.max_retries <= 16, "--max-retries must be in 0..16");
    std::string retry_why;
    need(retry_policy::parse(cfg.retry_on, &retry_why).has_value(), "--retry-on: " + retry_why);
    need(cfg.upstream.max_idle_connections >= 0, "--max-idle-connections must be >= 0");
    // Every timeout and interval: zero would mean "at once" or "all the time".
    const std::pair<common::http::duration, const char*> positive[] = {
        {cfg.upstream.connect_timeout, "connect-timeout"},
        {cfg.upstream.first_byte_timeout, "first-byte-timeout"},
        {cfg.upstream.stream_idle_timeout, "stream-idle-timeout"},
        {cfg.upstream.write_timeout, "upstream-write-timeout"},
        {cfg.retry_after, "retry-after"},
        {cfg.stale_after, "stale-after"},
        {cfg.monitor.scrape_interval, "scrape-interval"},
        {cfg.monitor.scrape_timeout, "scrape-timeout"},
        {cfg.monitor.metrics_missing_interval, "metrics-missing-interval"},
        {cfg.monitor.health_interval, "health-interval"},
        {cfg.monitor.health_timeout, "health-timeout"},
        {cfg.monitor.dns_interval, "dns-interval"},
        {cfg.monitor.models_interval, "models-interval"},
        {cfg.monitor.models_timeout, "models-timeout"},
        {cfg.monitor.models_refresh_gap, "models-refresh-gap"},
        {cfg.monitor.hit_ratio_window, "hit-ratio-window"},
        {cfg.backpressure_backoff, "backpressure-backoff"},
        {cfg.max_backoff, "max-backoff"},
        {cfg.health.open_time, "eject-time"}};
    for (const auto& [value, name] : positive)
        need(value.count() > 0, std::string("--") + name + " must be positive");
    common::http::check_server_config(cfg.http, errors);
    need(cfg.health.failure_threshold >= 1, "--failure-threshold must be at least 1");
    need(cfg.health.success_threshold >= 1, "--success-threshold must be at least 1");
    need(cfg.health.max_ejection_percent >= 0 && cfg.health.max_ejection_percent <= 100,
         "--max-ejection-percent must be in 0..100");
    need(cfg.shutdown_delay.count() >= 0, "--shutdown-delay must be >= 0");
    need(cfg.refusal_log_rate >= 0, "--refusal-log-rate must be >= 0");
    need(cfg.json_max_depth >= 2 && cfg.json_max_depth <= 1024,
         "--json-max-depth must be in 2..1024");
    need(cfg.monitor.bytes_per_token >= 1 && cfg.monitor.bytes_per_token <= 64,
         "--bytes-per-token must be in 1..64");
    need(!cfg.upstream.replace_client_auth || !cfg.monitor.replica_api_key.empty(),
         "--replace-client-auth needs --replica-api-key or --replica-api-key-file");
    check_policy_options(cfg.policy_knobs, errors);
    for (const auto& name : cfg.monitor.dns_names) {
        std::string_view spec = name;
        if (spec.starts_with("https://"))
            spec.remove_prefix(8);
        const auto colon = spec.rfind(':');
        unsigned port = 0;
        const char* port_end = spec.data() + spec.size();
        const bool port_ok =
            colon != std::string::npos &&
            std::from_chars(spec.data() + colon + 1, port_end, port).ptr == port_end && port >= 1 &&
            port <= 65535;
        // A name for the resolver: no brackets (the resolver takes a bare IPv6 address), no path.
        const bool host_ok =
            colon != std::string::npos && common::http::valid_host(spec.substr(0, colon));
        need(port_ok && host_ok, "--replica-dns '" + common::http::printable(name) +
                                     "' must be [https://]host:port (a DNS name, port 1..65535)");
    }
    common::log::level lvl;
    need(common::log::parse_level(cfg.log_level, lvl),
         "--log-level must be debug, info, warn or error");
    need(cfg.log_queue_bytes >= 4096, "--log-queue-bytes must be at least 4096");
    need(cfg.rate.rps >= 0 && cfg.rate.burst >= 0 && cfg.rate.tpm >= 0,
         "--rate-limit-rps, --rate-limit-burst and --rate-limit-tpm must be >= 0");
    need(cfg.rate.max_clients >= 1, "--rate-limit-clients must be at least 1");
    need(cfg.replica_max_inflight >= 0 && cfg.replica_queue_threshold >= 0,
         "--replica-max-inflight and --replica-queue-threshold must be >= 0");
    need(cfg.admission.queue_timeout.count() > 0, "--queue-timeout must be positive");
    need(cfg.admission.recheck.count() > 0, "--queue-recheck must be positive");
    need(cfg.admission.affinity_wait.count() >= 0, "--queue-affinity-wait must be >= 0");
    need(cfg.admission.scan_depth >= 1, "--queue-scan-depth must be at least 1");
    need(cfg.kv_subscriber.replay_timeout.count() > 0,
         "--kv-events-replay-timeout must be positive");
    need(cfg.precise.pending_ttl.count() >= 0, "--kv-events-pending-ttl must be >= 0");
    need(cfg.kv_subscriber.bootstrap_token.empty() || cfg.kv_bootstrap_token_file.empty(),
         "give --kv-bootstrap-token or --kv-bootstrap-token-file, not both");
    need(cfg.kv_subscriber.bootstrap_timeout.count() > 0,
         "--kv-bootstrap-timeout must be positive");
    need(cfg.kv_subscriber.bootstrap_max_bytes >= 4096,
         "--kv-bootstrap-max-bytes must be at least 4096");
    need(cfg.kv_subscriber.bootstrap_retry.count() >= 0, "--kv-bootstrap-retry must be >= 0");
    if (!cfg.tokenizer.endpoint.empty()) {
        std::string why;
        need(common::http::parse_url(cfg.tokenizer.endpoint, &why).has_value(),
             "--tokenize-endpoint: " + why);
    }
    need(cfg.tokenizer.timeout.count() > 0, "--tokenize-timeout must be positive");
    need(cfg.tokenizer.max_tokens >= 1, "--tokenize-max-tokens must be at least 1");
    need(cfg.tokenizer.max_values >= 16, "--tokenize-max-values must be at least 16");
    need(cfg.precise.max_blocks >= 1024, "--kv-events-max-blocks must be at least 1024");
    {
        trusted_proxies proxies;
        std::string why;
        need(proxies.parse(cfg.trusted_proxies, why), "--trusted-proxies: " + why);
        need(cfg.client_ipv6_prefix >= 1 && cfg.client_ipv6_prefix <= 128,
             "--client-ipv6-prefix must be in 1..128");
    }
    need(cfg.admin_max_connections >= 1, "--admin-max-connections must be at least 1");
    for (const auto& name : cfg.admin_server_names)
        need(!name.empty() && name.find_first_of(" /:[]") == std::string::npos,
             "--admin-server-name must be a host name (got '" + name + "')");
    need(cfg.admin_token.empty() || cfg.admin_token_file.empty(),
         "give --admin-token or --admin-token-file, not both");
    return errors;
}

std::vector<std::string> read_secrets(router_config& cfg) {
    std::vector<std::string> errors;
    if (const char* keys = std::getenv("LANES_API_KEYS"))
        cfg.api_keys_env = keys;
    const auto read = [&errors](const std::string& path, const char* flag, std::string& into) {
        if (path.empty())
            return;
        std::string why;
        if (auto secret = common::access::read_secret_file(path, why))
            into = std::move(*secret);
        else
            errors.push_back(std::string(flag) + ": " + why);
    };
    read(cfg.admin_token_file, "--admin-token-file", cfg.admin_token);
    read(cfg.kv_bootstrap_token_file, "--kv-bootstrap-token-file",
         cfg.kv_subscriber.bootstrap_token);
    if (cfg.isolate_cache_by_key && cfg.api_key_file.empty() && cfg.api_keys_env.empty())
        errors.push_back("--isolate-cache-by-key needs API keys (--api-key-file or "
                         "LANES_API_KEYS): the salt is per key");
    return errors;
}

} // namespace lanes::router
