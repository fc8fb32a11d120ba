// The router's view of its replicas: identity, routing state (healthy, draining), the in-flight
// count the router maintains itself, the last scrape of each replica's /metrics, and a pool of idle
// keep-alive upstream connections. Thread-safe; replicas may be added and removed at run time.
#pragma once

#include "common/http/client.hpp"
#include "router/fleet/health.hpp"
#include "router/fleet/prefill_fit.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <utility>
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
    std::optional<std::int64_t> max_num_seqs; // lanes_replica_scheduler_info
    // The prefill cost model's inputs (cumulative; prefill_fit.hpp) and its fit so far.
    std::optional<double> prefill_seconds, prefills, prompt_tokens, finished;
    std::optional<prefill_cost> prefill;
    // The ports of the KV-event sockets it announces (lanes_replica_kv_events_info); only the
    // port is taken, the host is always the replica's own.
    std::optional<unsigned short> kv_events_port;
    std::optional<unsigned short> kv_replay_port;
    std::chrono::steady_clock::time_point at{};
};

// What a replica's /v1/models said, as the monitor last read it.
struct model_list {
    bool known = false; // read at least once; until then the replica is taken to serve any model
    // A lanes replica in the byte vocabulary (models owned by "lanes", no lanes_tokenizer):
    // byte tokens, lanes' hashes.
    bool lanes = false;
    std::vector<std::string> ids;
    std::vector<std::string> objects; // each model's JSON object as the replica gave it

    // Whether the replica may serve `model`: its list names it, or is unknown or empty (the
    // snapshot leaves out unread lists once any list was read; see snapshot_cache::serving).
    bool serves(std::string_view model) const;
};

// The granularity the router hashes prompts in, the same for the whole fleet: a lanes replica's
// block is `block_size` byte tokens; an engine's is `block_size` of its tokens, which for text
// the router takes as `bytes_per_token` bytes each.
struct hash_units {
    std::size_t text_block_bytes = 16; // bytes of prompt text per block
    std::size_t id_block_tokens = 16;  // token ids per block (a token-id prompt's)
    bool engine = false;               // the fleet's units are an engine's, not lanes'
};

class replica {
public:
    explicit replica(common::http::url u, health_config health_cfg = {});

    const std::string& id() const { return id_; }
    const common::http::url& address() const { return url_; }
    const std::string& authority() const { return authority_; } // host:port, for Host

    // Written by the proxy: its requests in flight there (counted under the policies' lock at
    // the choice), its answers, and its backoff after a 429 or 503.
    struct traffic_state {
        std::atomic<std::int64_t> inflight{0};
        std::atomic<std::int64_t> requests_total{0};
        // No new request before this steady-clock time (ticks): it answered 429 or 503
        // (backpressure, for its Retry-After or the default backoff).
        std::atomic<std::int64_t> backoff_until{0};
    };
    // Written by the monitor (replica_monitor), one scrape, probe and models read at a time.
    struct monitor_state {
        std::atomic<bool> scrape_busy{false};     // a scrape of this replica is in flight
        std::atomic<bool> probe_busy{false};      // a /health probe of this replica is in flight
        std::atomic<bool> models_busy{false};     // a /v1/models read of it is in flight
        std::atomic<bool> probe_ok{false};        // its last /health probe answered 200
        std::atomic<bool> probe_answered{false};  // a /health probe has come back (either way)
        std::atomic<bool> scrape_answered{false}; // a /metrics scrape got an HTTP answer
        // No scrape before this steady-clock time (ticks): set when /metrics answered that it
        // has none, so a replica without metrics is not asked ten times a second.
        std::atomic<std::int64_t> scrape_not_before{0};
        // The prefix counters of its last scrape, which the monitor mirrors as increases (only
        // the monitor's scrape of this replica touches them). They go with the replica.
        struct mirrored_counters {
            bool seen = false;
            double hits = 0, queries = 0;
        };
        mirrored_counters mirrored;
        prefill_fit prefill; // its prefill cost model, fitted on each scrape
    };

    traffic_state traffic;
    monitor_state monitor;
    health_tracker health;              // circuit breaker: active checks, scrapes, passive
    std::atomic<bool> draining{false};  // written by the admin API
    std::atomic<bool> kv_joined{false}; // the KV-event subscriber has made its first try at it
    // Moves on when the replica's cache is known to be lost: its counters went back (a restart,
    // the monitor), its event stream started again (the subscriber) or the breaker ejected it.
    // What the router remembers of its cache from before is dropped.
    std::atomic<std::uint64_t> epoch{0};
    std::string source; // "flag", "admin", or the --replica-dns name

    bool healthy() { return health.routable(std::chrono::steady_clock::now()); }

    scraped_stats stats() const;
    // The last thing that went wrong with it (a failed probe, a failed request), for the live
    // page; empty when nothing has.
    void note_error(std::string what);
    std::pair<std::chrono::system_clock::time_point, std::string> last_error() const;
    void set_stats(const scraped_stats& s);
    // Counts set_stats() calls: a reader that saw this version already holds the latest stats.
    std::uint64_t stats_version() const { return stats_version_.load(std::memory_order_acquire); }

    std::shared_ptr<const model_list> models() const;
    void set_models(model_list m);
    std::uint64_t models_version() const { return models_version_.load(std::memory_order_acquire); }

    // An idle keep-alive connection, or nullptr: the one last given back on the io_context of
    // `user` (the executor of the coroutine about to use it) when there is one, which needs no
    // rebind; else one from another io_context, which the caller rebinds (still cheaper than a
    // new connection).
    std::unique_ptr<common::http::client_connection>
    take_idle(const boost::asio::any_io_executor& user);
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
    std::shared_ptr<const model_list> models_;
    std::atomic<std::uint64_t> models_version_{0};
    // Idle connections by the io_context their sockets are registered with, each list last in
    // first out; idle_count_ over all of them.
    struct idle_list {
        const boost::asio::execution_context* context;
        std::vector<std::unique_ptr<common::http::client_connection>> conns;
    };
    std::vector<idle_list> idle_;
    std::size_t idle_count_ = 0;
    std::chrono::system_clock::time_point error_at_{};
    std::string error_;
};

// Releases the `inflight` count that the proxy's pick raised (under the policy lock, so the next
// pick sees it) when it goes: no path after the pick can skip the release.
class inflight_guard {
public:
    explicit inflight_guard(std::shared_ptr<replica> r)
        : r_(std::move(r)) {}
    ~inflight_guard() { release(); }
    inflight_guard(const inflight_guard&) = delete;
    inflight_guard& operator=(const inflight_guard&) = delete;
    // Ends the count now (the replica is done before the client is); once.
    void release() {
        if (r_)
            std::exchange(r_, nullptr)->traffic.inflight.fetch_sub(1);
    }

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
    // What follows from what the replicas said of themselves (their /v1/models and scraped block
    // size), as update_fleet last worked it out; the monitor calls it after every models read
    // and every scrape that changed a block size, remove() too.
    // The fleet's hashing granularity:
    hash_units units() const;
    // The one model every replica with a read list serves, when there is exactly one, else "".
    std::string only_model() const;
    // Whether some replica's read /v1/models list names `model` (a replica whose list is unread
    // serves any model, but names none).
    bool lists(std::string_view model) const;
    void update_fleet(std::size_t default_block_size, std::size_t bytes_per_token);
    // Bumped on every add and remove, so users can notice a changed membership.
    std::uint64_t version() const { return version_.load(); }

private:
    health_config health_cfg_;
    mutable std::shared_mutex mutex_;
    std::vector<std::shared_ptr<replica>> replicas_;
    std::atomic<std::uint64_t> version_{0};
    std::atomic<std::size_t> text_block_bytes_{16};
    std::atomic<std::size_t> id_block_tokens_{16};
    std::atomic<bool> engine_units_{false};
    std::atomic<std::size_t> default_block_size_{16};
    std::atomic<std::size_t> bytes_per_token_{4};
    mutable std::mutex fleet_mutex_; // guards only_model_ and listed_
    std::string only_model_;
    std::vector<std::string> listed_; // every model a read list names, sorted

    void recompute_fleet();
};

} // namespace lanes::router
