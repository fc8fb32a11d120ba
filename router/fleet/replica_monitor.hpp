// Background work on the replica set, owned by the router and stopped with it:
// - scrapes each replica's /metrics every `scrape_interval` (a stale scrape is ignored by the
//   policies after `stale_after`) and mirrors its prefix-cache counters into the router's metrics;
// - probes each replica's /health every `health_interval` (these probes are also what takes an
//   ejected replica from half-open back to routable);
// - reads each replica's /v1/models every `models_interval`: the models it serves, and whether it
//   is a lanes replica (the fleet's hashing units follow);
// - re-resolves --replica-dns names every `dns_interval` and adds / removes their addresses.
// Probe failures feed the same circuit breaker as the proxy's own failures (health_report.hpp); a
// scrape that fails only leaves the replica's load stale.
#pragma once

#include "common/http/client.hpp"
#include "common/http/fetch.hpp"
#include "router/fleet/hit_window.hpp"
#include "router/fleet/replica_pool.hpp"
#include "router/fleet/upstream_config.hpp"
#include "router/metrics.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>

#include <atomic>
#include <cstddef>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace lanes::router {

// The monitor's intervals and timeouts (router_config::monitor).
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
    // The trailing window of lanes_router_prefix_cache_hit_ratio.
    common::http::duration hit_ratio_window{60'000};
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

// The addresses a --replica-dns name gives, one per host: a dual-stack name lists each pod
// twice, once per family, and two replicas for one pod would split its routing state (prefix
// index included); so its IPv4 addresses when it has any, else its IPv6 ones, each once.
std::vector<boost::asio::ip::address>
one_per_host(const std::vector<boost::asio::ip::address>& resolved);

class replica_monitor {
public:
    // `io` must be run by one thread (its coroutines share no strand).
    replica_monitor(boost::asio::io_context& io, replica_pool& pool, router_metrics& metrics,
                    monitor_config cfg, const upstream_config& upstream);
    void start();
    void stop(); // the loops end at their next tick; in-flight probes end by their timeouts

    // Reads every replica's /v1/models now (a request named a model no replica was known to
    // serve), at most once per `models_refresh_gap`; returns when the reads are over.
    boost::asio::awaitable<void> refresh_models();

private:
    using replica_task =
        boost::asio::awaitable<void> (replica_monitor::*)(std::shared_ptr<replica>);
    boost::asio::awaitable<void> per_replica_loop(common::http::duration interval,
                                                  std::atomic<bool> replica::monitor_state::*busy,
                                                  replica_task task);
    boost::asio::awaitable<void> dns_loop();
    // GET `path` from a replica within `timeout`, on one of its idle keep-alive connections
    // when it has one (a fresh one otherwise), which is given back when the answer allows.
    boost::asio::awaitable<common::http::fetch_result> get(replica& r, std::string_view path,
                                                           common::http::duration timeout);
    boost::asio::awaitable<void> scrape(std::shared_ptr<replica> r);
    boost::asio::awaitable<void> probe(std::shared_ptr<replica> r);
    boost::asio::awaitable<void> read_models(std::shared_ptr<replica> r);
    bool still_in_pool(const replica& r) const;
    void mirror_counters(replica& r, const scraped_stats& s);

    boost::asio::io_context& io_;
    replica_pool& pool_;
    router_metrics& metrics_;
    monitor_config cfg_;
    common::http::duration connect_timeout_; // scrapes and probes connect as requests do
    std::size_t max_idle_connections_;       // and give back at most this many to the pool
    std::shared_ptr<std::atomic<bool>> stopping_;
    std::atomic<std::int64_t> last_models_refresh_{0}; // steady ticks of refresh_models' last run
    hit_window fleet_hits_; // lanes_router_prefix_cache_hit_ratio's window
};

} // namespace lanes::router
