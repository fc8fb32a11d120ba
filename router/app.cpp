#include "router/app.hpp"

#include "common/cpus.hpp"
#include "common/http/run_loop.hpp"
#include "common/http/tls.hpp"
#include "common/http/url.hpp"
#include "common/log.hpp"
#include "common/openai/error.hpp"
#include "router/policies/factory.hpp"
#include "router/request/routing_key.hpp"

namespace lanes::router {

router_app::router_app(router_config cfg)
    : cfg_(std::move(cfg))
    , pool_(cfg_.health) {
    common::http::set_client_trust({cfg_.replica_ca, cfg_.replica_insecure_skip_verify});
    if (cfg_.replica_insecure_skip_verify)
        LANES_LOG(warn, "router",
                  "--replica-insecure-skip-verify: https replicas' certificates are not checked "
                  "(for tests only)");
    for (const auto& text : cfg_.replicas)
        pool_.add(*common::http::parse_url(text), "flag");
    // By default one I/O thread per CPU the process may use: its affinity and its cgroup's CPU
    // quota count, so a container limited to 2 CPUs runs 2, however many the node has.
    const common::cpu_count cpus = common::usable_cpus();
    threads_ = cfg_.threads > 0 ? static_cast<unsigned>(cfg_.threads) : cpus.usable;
    cpus_ = cpus.describe();
    io_ = std::make_unique<boost::asio::io_context>(1);
    for (unsigned i = 0; threads_ > 1 && i < threads_; ++i) {
        worker_owners_.push_back(std::make_unique<boost::asio::io_context>(1));
        workers_.push_back(worker_owners_.back().get());
    }
    cfg_.http.threads = 1;
    // A client connection may hold an upstream one: two descriptors each.
    const auto fds = common::http::raise_open_file_limit();
    if (cfg_.http.max_connections == 0)
        cfg_.http.max_connections = common::http::fitting_max_connections(fds.soft, 2);
    common::http::grow_descriptor_table(cfg_.http.descriptor_table);
    pool_.update_fleet(cfg_.monitor.default_block_size, cfg_.monitor.bytes_per_token);
    monitor_ =
        std::make_unique<replica_monitor>(*io_, pool_, metrics_, cfg_.monitor, cfg_.upstream);
    if (cfg_.kv_events) {
        precise_ = std::make_shared<precise_index>(cfg_.precise);
        cfg_.policy_knobs.precise = precise_;
        subscriber_ = std::make_unique<kv_subscriber>(pool_, *precise_, metrics_,
                                                      cfg_.kv_subscriber, kv_event_root);
    }
    proxy_ =
        std::make_unique<proxy>(cfg_, pool_, metrics_, make_policy(cfg_.policy, cfg_.policy_knobs),
                                [this] { return monitor_->refresh_models(); });
    if (subscriber_) // before anything is served: readiness waits for the first look
        proxy_->set_warm_check([s = subscriber_.get()] { return s->warmed(); });
}

router_app::~router_app() {
    release_io();
}

std::vector<std::string> router_app::load_keys() {
    std::vector<std::string> errors;
    if (proxy_->keys_configured())
        proxy_->load_keys(errors);
    else
        LANES_LOG(warn, "router",
                  "no API keys (--api-key-file, LANES_API_KEYS): the router serves anyone who "
                  "reaches it");
    return errors;
}

void router_app::listen() {
    common::http::server_config traffic_http = cfg_.http;
    traffic_http.request_ids = true;
    server_ = std::make_unique<common::http::server>(
        *io_, traffic_http,
        [p = proxy_.get()](common::http::request& req, common::http::response_writer& out) {
            return p->handle(req, out);
        },
        "lanes-router", common::openai::error_page);
    server_->spread_over(workers_);
    server_->on_answered(
        [p = proxy_.get()](const common::http::request* req,
                           const common::http::response_writer& out) { p->answered(req, out); });
    server_->screen_heads([p = proxy_.get()](const common::http::request& head,
                                             const boost::asio::ip::address& peer) {
        return p->screen_head(head, peer);
    });
    metrics_.read_connections_from([s = server_.get()] {
        return router_metrics::connection_counts{s->open_connections(), s->refused_connections()};
    });
    server_->listen(cfg_.host, cfg_.port);
    // The admin API on a listener of its own, on the main context (few, short requests). Each
    // router process answers for itself on its own admin port (its metrics, its fleet view):
    // the admin listener is never shared.
    common::http::server_config admin_http = cfg_.http;
    admin_http.max_connections = cfg_.admin_max_connections;
    admin_http.reuse_port = false;
    admin_http.request_ids = true;
    admin_server_ = std::make_unique<common::http::server>(
        *io_, admin_http,
        [p = proxy_.get()](common::http::request& req, common::http::response_writer& out) {
            return p->handle_admin(req, out);
        },
        "admin", common::openai::error_page);
    admin_server_->listen(cfg_.admin_host, cfg_.admin_port);
    if (cfg_.admin_token.empty())
        LANES_LOG(warn, "router",
                  "no --admin-token: the admin API answers loopback clients only"
                      << (cfg_.admin_insecure_loopback
                              ? ", and lets them change the fleet (--admin-insecure-loopback)"
                              : ", read-only"));
}

void router_app::reload() {
    server_->reload_tls();
    admin_server_->reload_tls();
    if (!proxy_->keys_configured())
        return;
    std::vector<std::string> key_errors;
    if (proxy_->load_keys(key_errors)) {
        LANES_LOG(info, "router", "API keys reloaded");
        return;
    }
    for (const auto& e : key_errors)
        LANES_LOG(error, "router", "API keys not reloaded (the old ones stay): " << e);
}

int router_app::run() {
    listen();
    monitor_->start();
    if (subscriber_)
        subscriber_->start();
    if (pool_.all().empty() && cfg_.monitor.dns_names.empty())
        LANES_LOG(warn, "router",
                  "no replicas: every request is answered 503 until some are added (--replica, "
                  "--replica-dns, or POST /admin/replicas on the admin listener)");
    LANES_LOG(info, "router",
              "policy " << cfg_.policy << ", " << pool_.all().size() << " replica(s), " << threads_
                        << " I/O thread(s)"
                        << (cfg_.threads > 0 ? "" : " (CPUs usable: " + cpus_ + ")") << ", at most "
                        << cfg_.http.max_connections << " client connections");
    const auto on_signal = [this] {
        server_->stop();
        admin_server_->stop();
        monitor_->stop();
        if (subscriber_)
            subscriber_->stop();
    };
    const auto drained = [this] { return server_->active_requests() == 0; };
    common::http::shutdown_steps steps;
    steps.on_notice = [this] { proxy_->set_shutting_down(); };
    steps.delay = cfg_.shutdown_delay;
    steps.on_hangup = [this] { reload(); };
    const int code = common::http::run_until_signal(*io_, workers_, cfg_.http.shutdown_grace,
                                                    on_signal, drained, steps);
    release_io();
    return code;
}

void router_app::release_io() {
    if (!io_)
        return;
    // Pooled upstream sockets belong to the io_contexts: close them before those go.
    proxy_->release_snapshot();
    for (const auto& r : pool_.all())
        r->drop_idle();
    // The listener's context goes first: an accept still queued there holds a socket that
    // belongs to a worker's context, which must outlive it.
    if (server_)
        server_->release_listener();
    if (admin_server_)
        admin_server_->release_listener();
    io_.reset();
    worker_owners_.clear();
}

} // namespace lanes::router
