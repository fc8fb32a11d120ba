// lanes-router: parse config, wire the replica pool, policy and proxy, run until SIGINT/SIGTERM.
#include "common/access/secret.hpp"
#include "common/cpus.hpp"
#include "common/http/run_loop.hpp"
#include "common/http/server.hpp"
#include "common/http/tls.hpp"
#include "common/http/url.hpp"
#include "common/log.hpp"
#include "common/openai/error.hpp"
#include "router/config.hpp"
#include "router/fleet/kv_subscriber.hpp"
#include "router/fleet/replica_monitor.hpp"
#include "router/fleet/replica_pool.hpp"
#include "router/metrics.hpp"
#include "router/proxy.hpp"
#include "router/request/routing_key.hpp"

#include <boost/asio/io_context.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>
#include <thread>

int main(int argc, char** argv) {
    using namespace lanes;
    router::router_config cfg;
    bool help = false;
    std::string usage;
    std::vector<std::string> errors = router::load_config(argc, argv, cfg, help, usage);
    if (help) {
        std::fputs(usage.c_str(), stdout);
        return 0;
    }
    auto more = router::validate(cfg);
    errors.insert(errors.end(), more.begin(), more.end());
    if (!errors.empty())
        return common::report_config_errors("lanes-router", errors);
    common::log::level lvl{};
    common::log::parse_level(cfg.log_level, lvl);
    common::log::set_level(lvl);
    common::log::set_queue_limit(cfg.log_queue_bytes);
    if (const char* keys = std::getenv("LANES_API_KEYS"))
        cfg.api_keys_env = keys;
    if (!cfg.admin_token_file.empty()) {
        std::string why;
        auto token = common::access::read_secret_file(cfg.admin_token_file, why);
        if (!token)
            return common::report_config_errors("lanes-router", {"--admin-token-file: " + why});
        cfg.admin_token = std::move(*token);
    }
    if (!cfg.kv_bootstrap_token_file.empty()) {
        std::string why;
        auto token = common::access::read_secret_file(cfg.kv_bootstrap_token_file, why);
        if (!token)
            return common::report_config_errors("lanes-router",
                                                {"--kv-bootstrap-token-file: " + why});
        cfg.kv_subscriber.bootstrap_token = std::move(*token);
    }

    try {
        common::http::set_client_trust({cfg.replica_ca, cfg.replica_insecure_skip_verify});
        if (cfg.replica_insecure_skip_verify)
            LANES_LOG(warn, "router",
                      "--replica-insecure-skip-verify: https replicas' certificates are not "
                      "checked (for tests only)");
        router::replica_pool pool(cfg.health);
        for (const auto& text : cfg.replicas)
            pool.add(*common::http::parse_url(text), "flag");
        router::router_metrics metrics;
        // By default one I/O thread per CPU the process may use: its affinity and its cgroup's
        // CPU quota count, so a container limited to 2 CPUs runs 2, however many the node has.
        const common::cpu_count cpus = common::usable_cpus();
        const unsigned threads = cfg.threads > 0 ? static_cast<unsigned>(cfg.threads) : cpus.usable;
        // Owned through pointers so they can be destroyed (with every pending coroutine frame)
        // while the objects those frames refer to still exist. With several I/O threads each runs
        // an io_context of its own that client connections are spread over (no strands, no
        // locking between them); `io` then holds the listener, the monitor and the signals.
        auto io_owner = std::make_unique<boost::asio::io_context>(1);
        boost::asio::io_context& io = *io_owner;
        std::vector<std::unique_ptr<boost::asio::io_context>> worker_owners;
        std::vector<boost::asio::io_context*> workers;
        for (unsigned i = 0; threads > 1 && i < threads; ++i) {
            worker_owners.push_back(std::make_unique<boost::asio::io_context>(1));
            workers.push_back(worker_owners.back().get());
        }
        cfg.http.threads = 1;
        // A client connection may hold an upstream one: two descriptors each.
        const auto fds = common::http::raise_open_file_limit();
        if (cfg.http.max_connections == 0)
            cfg.http.max_connections = common::http::fitting_max_connections(fds.soft, 2);
        common::http::grow_descriptor_table(cfg.http.descriptor_table);
        pool.update_fleet(cfg.monitor.default_block_size, cfg.monitor.bytes_per_token);
        router::replica_monitor monitor(io, pool, metrics, cfg.monitor, cfg.upstream);
        std::shared_ptr<router::precise_index> precise;
        std::unique_ptr<router::kv_subscriber> subscriber;
        if (cfg.kv_events) {
            precise = std::make_shared<router::precise_index>(cfg.precise);
            cfg.policy_knobs.precise = precise;
            subscriber = std::make_unique<router::kv_subscriber>(
                pool, *precise, metrics, cfg.kv_subscriber,
                [](const router::replica& r, const std::string& lora, std::uint64_t salt_hash) {
                    const auto models = r.models();
                    const std::string model =
                        !lora.empty() ? lora : (models->ids.size() == 1 ? models->ids.front() : "");
                    // A salted run: the request's root folds the salt's hash in the same way.
                    return router::affinity_root(model, salt_hash);
                });
        }
        router::proxy front(cfg, pool, metrics, router::make_policy(cfg.policy, cfg.policy_knobs),
                            [&monitor] { return monitor.refresh_models(); });
        if (subscriber) // before anything is served: readiness waits for the first look
            front.set_warm_check([s = subscriber.get()] { return s->warmed(); });
        if (cfg.isolate_cache_by_key && !front.keys_configured())
            return common::report_config_errors(
                "lanes-router", {"--isolate-cache-by-key needs API keys (--api-key-file or "
                                 "LANES_API_KEYS): the salt is per key"});
        if (front.keys_configured()) {
            std::vector<std::string> key_errors;
            if (!front.load_keys(key_errors))
                return common::report_config_errors("lanes-router", key_errors);
        } else {
            LANES_LOG(warn, "router",
                      "no API keys (--api-key-file, LANES_API_KEYS): the router serves anyone "
                      "who reaches it");
        }
        common::http::server server(
            io, cfg.http,
            [&front](common::http::request& req, common::http::response_writer& out) {
                return front.handle(req, out);
            },
            "lanes-router", common::openai::error_page);
        server.spread_over(workers);
        metrics.read_connections_from([&server] {
            return router::router_metrics::connection_counts{server.open_connections(),
                                                             server.refused_connections()};
        });
        server.listen(cfg.host, cfg.port);
        // The admin API on a listener of its own, on the main context (few, short requests).
        common::http::server_config admin_http = cfg.http;
        admin_http.max_connections = cfg.admin_max_connections;
        // Each router process answers for itself on its own admin port (its metrics, its
        // fleet view): the admin listener is never shared.
        admin_http.reuse_port = false;
        common::http::server admin_server(
            io, admin_http,
            [&front](common::http::request& req, common::http::response_writer& out) {
                return front.handle_admin(req, out);
            },
            "admin", common::openai::error_page);
        admin_server.listen(cfg.admin_host, cfg.admin_port);
        if (cfg.admin_token.empty())
            LANES_LOG(warn, "router",
                      "no --admin-token: the admin API answers loopback clients only"
                          << (cfg.admin_insecure_loopback
                                  ? ", and lets them change the fleet (--admin-insecure-loopback)"
                                  : ", read-only"));
        monitor.start();
        if (subscriber)
            subscriber->start();
        LANES_LOG(info, "router",
                  "policy " << cfg.policy << ", " << pool.all().size() << " replica(s), " << threads
                            << " I/O thread(s)"
                            << (cfg.threads > 0 ? "" : " (CPUs usable: " + cpus.describe() + ")")
                            << ", at most " << cfg.http.max_connections << " client connections");
        const auto on_signal = [&] {
            server.stop();
            admin_server.stop();
            monitor.stop();
            if (subscriber)
                subscriber->stop();
        };
        const auto drained = [&] { return server.active_requests() == 0; };
        common::http::shutdown_steps steps;
        steps.on_notice = [&front] { front.set_shutting_down(); };
        steps.delay = cfg.shutdown_delay;
        steps.on_hangup = [&front, &server, &admin_server] {
            server.reload_tls();
            admin_server.reload_tls();
            if (!front.keys_configured())
                return;
            std::vector<std::string> key_errors;
            if (front.load_keys(key_errors)) {
                LANES_LOG(info, "router", "API keys reloaded");
                return;
            }
            for (const auto& e : key_errors)
                LANES_LOG(error, "router", "API keys not reloaded (the old ones stay): " << e);
        };
        const int code = common::http::run_until_signal(io, workers, cfg.http.shutdown_grace,
                                                        on_signal, drained, steps);
        // Pooled upstream sockets belong to the io_contexts: close them before those go.
        front.release_snapshot();
        for (const auto& r : pool.all())
            r->drop_idle();
        // The listener's context goes first: an accept still queued there holds a socket that
        // belongs to a worker's context, which must outlive it.
        server.release_listener();
        admin_server.release_listener();
        io_owner.reset();
        worker_owners.clear();
        return code;
    } catch (const std::exception& e) {
        common::log::flush();
        std::fprintf(stderr, "lanes-router: %s\n", e.what());
        return 1;
    }
}
