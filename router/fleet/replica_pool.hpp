// The router's view of its replicas: identity, routing state (healthy, draining), the in-flight
// count the router maintains itself, the last scrape of each replica's /metrics, and a pool of idle
// keep-alive upstream connections. Thread-safe; replicas may be added and removed at run time.
#pragma once

#include "common/http/client.hpp"
#include "router/fleet/health.hpp"
#include "router/policies/policy.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <vector>

namespace lanes::router {

// Values read from a replica's /metrics (vLLM V1/V0, SGLang or lanes names).
struct scraped_stats {
    std::optional<double> kv_usage;
    std::optional<std::int64_t> waiting;
    std::optional<std::int64_t> running;
    std::optional<double> prefix_cache_hits;    // tokens, cumulative
    std::optional<double> prefix_cache_queries; // tokens, cumulative
    std::optional<std::int64_t> num_blocks;
    std::optional<std::int64_t> block_size;
    std::chrono::steady_clock::time_point at{};
};

class replica {
public:
    explicit replica(common::http::url u, health_config health_cfg = {});

    const std::string& id() const { return id_; }
    const common::http::url& address() const { return url_; }
    const std::string& authority() const { return authority_; } // host:port, for Host

    std::atomic<std::int64_t> inflight{0};
    std::atomic<std::int64_t> requests_total{0};
    std::atomic<bool> draining{false};
    health_tracker health;                // circuit breaker: active checks, scrapes, passive
    std::atomic<bool> scrape_busy{false}; // a scrape of this replica is in flight
    std::atomic<bool> probe_busy{false};  // a /health probe of this replica is in flight
    // No scrape before this steady-clock time (ticks): set when /metrics answered that it has
    // none, so a replica without metrics is not asked ten times a second.
    std::atomic<std::int64_t> scrape_not_before{0};
    std::string source; // "flag", "admin", or the --replica-dns name

    bool healthy() { return health.routable(std::chrono::steady_clock::now()); }

    scraped_stats stats() const;
    void set_stats(const scraped_stats& s);
    // Counts set_stats() calls: a reader that saw this version already holds the latest stats.
    std::uint64_t stats_version() const { return stats_version_.load(std::memory_order_acquire); }

    // An idle keep-alive connection, or nullptr.
    std::unique_ptr<common::http::client_connection> take_idle();
    // Returns a connection for reuse; dropped when `max_idle` are already kept.
    void give_back(std::unique_ptr<common::http::client_connection> conn, std::size_t max_idle);
    void drop_idle();

private:
    common::http::url url_;
    std::string authority_;
    std::string id_;
    mutable std::mutex mutex_;
    scraped_stats stats_;
    std::atomic<std::uint64_t> stats_version_{0};
    std::vector<std::unique_ptr<common::http::client_connection>> idle_;
};

// Releases the `inflight` count that the proxy's pick raised (under the policy lock, so the next
// pick sees it) when it goes: no path after the pick can skip the release.
class inflight_guard {
public:
    explicit inflight_guard(std::shared_ptr<replica> r)
        : r_(std::move(r)) {}
    ~inflight_guard() { r_->inflight.fetch_sub(1); }
    inflight_guard(const inflight_guard&) = delete;
    inflight_guard& operator=(const inflight_guard&) = delete;

private:
    std::shared_ptr<replica> r_;
};

class replica_pool {
public:
    explicit replica_pool(health_config health_cfg = {})
        : health_cfg_(health_cfg) {}
    // Adds a replica by URL; false when it is already present.
    bool add(const common::http::url& u, std::string source = "flag");
    bool remove(const std::string& id);
    std::shared_ptr<replica> find(const std::string& id) const;
    std::vector<std::shared_ptr<replica>> all() const;
    // Bumped on every add and remove, so users can notice a changed membership.
    std::uint64_t version() const { return version_.load(); }

private:
    health_config health_cfg_;
    mutable std::shared_mutex mutex_;
    std::vector<std::shared_ptr<replica>> replicas_;
    std::atomic<std::uint64_t> version_{0};
};

} // namespace lanes::router
