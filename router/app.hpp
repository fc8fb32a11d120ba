// lanes-router put together: the replica pool and its monitor, the KV-event subscriber and its
// precise index (with --kv-events), the proxy with its policy, the traffic and admin listeners on
// one io_context or one per I/O thread, and the order they stop and go in. main() parses and
// checks the config, then builds one of these and runs it.
#pragma once

#include "common/http/server.hpp"
#include "router/config.hpp"
#include "router/fleet/kv_subscriber.hpp"
#include "router/fleet/replica_monitor.hpp"
#include "router/fleet/replica_pool.hpp"
#include "router/index/precise_index.hpp"
#include "router/metrics.hpp"
#include "router/proxy/proxy.hpp"

#include <boost/asio/io_context.hpp>

#include <memory>
#include <string>
#include <vector>

namespace lanes::router {

class router_app {
public:
    // `cfg` as load_config, validate and read_secrets left it. Builds everything; listens on
    // nothing yet.
    explicit router_app(router_config cfg);
    router_app(const router_app&) = delete;
    router_app& operator=(const router_app&) = delete;
    ~router_app();

    // Reads the API keys when some are configured (warns when none are): every problem found.
    std::vector<std::string> load_keys();
    // Listens, starts the background work, serves until SIGINT or SIGTERM and drains; the
    // process's exit code.
    int run();

private:
    // Creates the listeners and the logs that say how the router is exposed.
    void listen();
    // SIGHUP: the listeners' certificates and the API keys again.
    void reload();
    // What must go before the io_contexts do, in order.
    void release_io();

    router_config cfg_;
    replica_pool pool_;
    router_metrics metrics_;
    unsigned threads_ = 1;
    std::string cpus_; // the CPUs usable, described for the start-up log
    // Owned through pointers so they can be destroyed (with every pending coroutine frame) while
    // the objects those frames refer to still exist. With several I/O threads each runs an
    // io_context of its own that client connections are spread over (no strands, no locking
    // between them); io_ then holds the listeners, the monitor and the signals.
    std::unique_ptr<boost::asio::io_context> io_;
    std::vector<std::unique_ptr<boost::asio::io_context>> worker_owners_;
    std::vector<boost::asio::io_context*> workers_;
    std::unique_ptr<replica_monitor> monitor_;
    std::shared_ptr<precise_index> precise_;
    std::unique_ptr<kv_subscriber> subscriber_;
    std::unique_ptr<proxy> proxy_;
    std::unique_ptr<common::http::server> server_;
    std::unique_ptr<common::http::server> admin_server_;
};

} // namespace lanes::router
