// The router's traffic front: the route tables of the traffic and admin listeners, the API key
// and rate-limit checks a request passes before it is planned, and the pages the router answers
// itself (probes, metrics, the models union, the live page, the admin API). What needs a replica
// goes to the planner.
#pragma once

#include "common/http/message.hpp"
#include "common/http/response_writer.hpp"
#include "router/access/api_keys.hpp"
#include "router/access/client.hpp"
#include "router/access/client_address.hpp"
#include "router/admin.hpp"
#include "router/proxy/proxy_config.hpp"
#include "router/status_pages.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/address.hpp>

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::router {

class accounting;
class client_limits;
class planner;
class replica_pool;
class router_metrics;

class front {
public:
    // Reads every replica's model list again (the monitor's refresh_models); may be empty.
    using models_refresher = std::function<boost::asio::awaitable<void>()>;

    front(const proxy_config& cfg, replica_pool& pool, router_metrics& metrics, planner& plans,
          client_limits& limits, accounting& counts, models_refresher refresh_models);

    // The traffic listener's requests.
    boost::asio::awaitable<void> handle(common::http::request& req,
                                        common::http::response_writer& out);
    // The admin listener's: the admin API, and /health, /readiness and /metrics again.
    boost::asio::awaitable<void> handle_admin(common::http::request& req,
                                              common::http::response_writer& out);

    // The traffic listener's look at a request's header while its body is still coming: a
    // missing or wrong API key (401) or a client over its request rate (429) is answered before
    // the body is read (no 100 Continue, no buffering for a stranger). Probes and pages are left
    // to handle(); handle() checks (and takes) again, so what passes here is counted once.
    std::optional<common::http::response> screen_head(const common::http::request& head,
                                                      const boost::asio::ip::address& peer);

    // Reads the API keys (at start and on SIGHUP); false with `errors` set when they could not
    // be read, and then the keys in force stay. Without keys configured the router is open.
    bool load_keys(std::vector<std::string>& errors) { return keys_.load(errors); }
    bool keys_configured() const { return keys_.configured(); }
    status_pages& status() { return status_; }

private:
    using page = boost::asio::awaitable<void> (front::*)(common::http::request&,
                                                         common::http::response_writer&);
    using client_page = boost::asio::awaitable<void> (front::*)(common::http::request&,
                                                                common::http::response_writer&,
                                                                client);
    struct route {
        std::string_view path;
        unsigned methods;
        page serve;
    };
    // A route that needs a key when keys are configured; its handler learns whose it was.
    struct client_route {
        std::string_view path;
        unsigned methods;
        client_page serve;
    };

    // A request past its key and rate-limit checks: the planner's routes, or a refusal.
    boost::asio::awaitable<void> serve_client(common::http::request& req,
                                              common::http::response_writer& out,
                                              std::string_view path, client who);
    // 405 with Allow for a known path asked with another method, else 404.
    boost::asio::awaitable<void> unrouted(const common::http::request& req,
                                          common::http::response_writer& out, unsigned path_methods,
                                          std::string_view not_found);
    // 401 for a missing or unknown key.
    common::http::response invalid_key(const common::http::request& req);
    // Who sent `req`: its API key when keys are configured (none when missing or wrong) and
    // whom its limits count, the key's name or the client's address.
    client client_of(const common::http::request& req, const boost::asio::ip::address& peer) const;

    boost::asio::awaitable<void> completions(common::http::request& req,
                                             common::http::response_writer& out, client who);
    boost::asio::awaitable<void> chat_completions(common::http::request& req,
                                                  common::http::response_writer& out, client who);
    boost::asio::awaitable<void> responses(common::http::request& req,
                                           common::http::response_writer& out, client who);
    boost::asio::awaitable<void> models(common::http::request& req,
                                        common::http::response_writer& out, client who);
    boost::asio::awaitable<void> health(common::http::request& req,
                                        common::http::response_writer& out);
    boost::asio::awaitable<void> readiness(common::http::request& req,
                                           common::http::response_writer& out);
    boost::asio::awaitable<void> metrics_page(common::http::request& req,
                                              common::http::response_writer& out);
    // The live page (/ui) and its state (/ui/state): on the admin listener always, on the
    // traffic port with --ui-public.
    boost::asio::awaitable<void> ui_page(common::http::request& req,
                                         common::http::response_writer& out);
    boost::asio::awaitable<void> ui_state(common::http::request& req,
                                          common::http::response_writer& out);
    boost::asio::awaitable<void> ui_state_admin(common::http::request& req,
                                                common::http::response_writer& out);

    const proxy_config& cfg_;
    replica_pool& pool_;
    router_metrics& metrics_;
    planner& plans_;
    client_limits& limits_;
    accounting& counts_;
    models_refresher refresh_models_;
    admin admin_;
    key_store keys_;
    trusted_proxies proxies_;
    status_pages status_;
};

} // namespace lanes::router
