// What the router says of itself and its fleet: liveness (/health, /liveness: 200 while the
// process serves), readiness (/readiness: 200 while some replica answers its health probes and
// the router is not shutting down, else 503), its metrics, and the models its replicas serve.
#pragma once

#include "common/http/message.hpp"
#include "common/http/response_writer.hpp"
#include "router/fleet/replica_pool.hpp"
#include "router/metrics.hpp"

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <functional>
#include <vector>

namespace lanes::router {

// The pool's replicas as the per-replica gauges show them (router_metrics::expose's argument).
std::vector<replica_reading> readings_of(const replica_pool& pool);

class status_pages {
public:
    status_pages(replica_pool& pool, router_metrics& metrics)
        : pool_(pool)
        , metrics_(metrics) {}

    boost::asio::awaitable<void> health(common::http::request& req,
                                        common::http::response_writer& out);
    boost::asio::awaitable<void> readiness(common::http::request& req,
                                           common::http::response_writer& out);
    boost::asio::awaitable<void> metrics(common::http::request& req,
                                         common::http::response_writer& out);
    // The union of the models the healthy replicas serve, from their last /v1/models read.
    boost::asio::awaitable<void> models(common::http::request& req,
                                        common::http::response_writer& out);

    void set_shutting_down() { shutting_down_.store(true); }
    // Readiness also waits for `warm` (the KV-event index joined at start).
    void set_warm_check(std::function<bool()> warm) { warm_ = std::move(warm); }
    bool ready() const;

private:
    replica_pool& pool_;
    router_metrics& metrics_;
    std::atomic<bool> shutting_down_{false};
    std::function<bool()> warm_;
};

} // namespace lanes::router
