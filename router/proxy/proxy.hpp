// The router's proxy, put together: the front (route tables, keys, limits, the router's own
// pages) hands a request to the planner (read, hashed, its plan), the planner to the dispatcher
// (admission, then attempts until a replica takes it), which asks the chooser where each attempt
// goes and runs it as an upstream_call; accounting counts what came of it. This class owns them
// in that order of dependence and is what main wires to the listeners.
#pragma once

#include "common/http/message.hpp"
#include "common/http/response_writer.hpp"
#include "router/proxy/accounting.hpp"
#include "router/proxy/admission_gate.hpp"
#include "router/proxy/chooser.hpp"
#include "router/proxy/client_limits.hpp"
#include "router/proxy/dispatcher.hpp"
#include "router/proxy/front.hpp"
#include "router/proxy/planner.hpp"
#include "router/proxy/proxy_config.hpp"
#include "router/proxy/response_affinity.hpp"

#include <boost/asio/awaitable.hpp>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace lanes::router {

class policy;
class replica_pool;
class router_metrics;

class proxy {
public:
    // `refresh_models` reads every replica's model list again (the monitor's refresh_models).
    using models_refresher = std::function<boost::asio::awaitable<void>()>;

    proxy(const proxy_config& cfg, replica_pool& pool, router_metrics& metrics,
          std::unique_ptr<policy> routing, models_refresher refresh_models = {});

    // The traffic listener's requests.
    boost::asio::awaitable<void> handle(common::http::request& req,
                                        common::http::response_writer& out) {
        return front_.handle(req, out);
    }
    // The admin listener's: the admin API, and /health, /readiness and /metrics again.
    boost::asio::awaitable<void> handle_admin(common::http::request& req,
                                              common::http::response_writer& out) {
        return front_.handle_admin(req, out);
    }

    // The traffic listener's head screen (front::screen_head).
    std::optional<common::http::response> screen_head(const common::http::request& head,
                                                      const boost::asio::ip::address& peer) {
        return front_.screen_head(head, peer);
    }
    // The traffic listener's answered hook: refusals get their access line.
    void answered(const common::http::request* req, const common::http::response_writer& out) {
        counts_.answered(req, out);
    }
    // Reads the API keys (at start and on SIGHUP); false with `errors` set when they could not
    // be read, and then the keys in force stay. Without keys configured the router is open.
    bool load_keys(std::vector<std::string>& errors) { return front_.load_keys(errors); }
    bool keys_configured() const { return front_.keys_configured(); }
    // From SIGTERM on, /readiness answers 503 (the router keeps serving until it stops).
    void set_shutting_down() { front_.status().set_shutting_down(); }
    // /readiness also waits for `warm` (the KV-event index's first look at the replicas).
    void set_warm_check(std::function<bool()> warm) {
        front_.status().set_warm_check(std::move(warm));
    }
    // Lets go of the replicas the last decision saw, removed ones included. Call at shutdown
    // before the io_contexts go: a replica holds pooled connections bound to them.
    void release_snapshot() { choose_.release_snapshot(); }

private:
    accounting counts_;
    client_limits limits_;
    chooser choose_;
    admission_gate gate_;
    response_affinity responses_;
    dispatcher dispatch_;
    planner plans_;
    front front_;
};

} // namespace lanes::router
