#include "router/proxy/front.hpp"

#include "common/access/secret.hpp"
#include "common/http/routes.hpp"
#include "common/openai/error.hpp"
#include "router/fleet/replica_pool.hpp"
#include "router/metrics.hpp"
#include "router/proxy/accounting.hpp"
#include "router/proxy/client_limits.hpp"
#include "router/proxy/planner.hpp"
#include "router/ui/live_state.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <array>
#include <chrono>

namespace lanes::router {

namespace asio = boost::asio;
namespace http = common::http;
namespace openai = common::openai;
namespace bhttp = boost::beast::http;

namespace {

// The paths passed on to the least-loaded replica serving their model, bodies untouched.
constexpr std::array<std::string_view, 11> forwarded_paths{
    "/v1/embeddings", "/v1/rerank", "/rerank",   "/v2/rerank",  "/v1/score",   "/score",
    "/pooling",       "/classify",  "/tokenize", "/detokenize", "/v1/messages"};

admin::access admin_access(const proxy_config& cfg) {
    admin::access a;
    if (!cfg.admin_token.empty())
        a.token = common::access::sha256(cfg.admin_token);
    a.insecure_loopback = cfg.admin_insecure_loopback;
    a.server_names = cfg.admin_server_names;
    return a;
}

// The live page's state as an answer no cache keeps.
http::response no_store(const http::request& req, std::string json) {
    auto res = http::make_response(req, bhttp::status::ok, std::move(json));
    res.set(bhttp::field::cache_control, "no-store");
    return res;
}

} // namespace

front::front(const proxy_config& cfg, replica_pool& pool, router_metrics& metrics, planner& plans,
             client_limits& limits, accounting& counts, models_refresher refresh_models)
    : cfg_(cfg)
    , pool_(pool)
    , metrics_(metrics)
    , plans_(plans)
    , limits_(limits)
    , counts_(counts)
    , refresh_models_(std::move(refresh_models))
    , admin_(admin_access(cfg), pool)
    , keys_(cfg.api_key_file, cfg.api_keys_env)
    , status_(pool, metrics) {
    std::string why;
    proxies_.parse(cfg.trusted_proxies, why); // validated with the rest of the config
    proxies_.set_ipv6_prefix(static_cast<unsigned>(cfg.client_ipv6_prefix));
}

std::optional<http::response> front::screen_head(const http::request& head,
                                                 const boost::asio::ip::address& peer) {
    const std::string_view path = http::path_of(head.target());
    if (path == "/health" || path == "/liveness" || path == "/readiness" || path == "/metrics" ||
        path == "/ui" || path == "/ui/state")
        return std::nullopt; // no body to speak of; handle() answers them
    const client who = client_of(head, peer);
    if (keys_.configured() && !who.key) {
        metrics_.access_refusals.with({"invalid_api_key"}).inc();
        return invalid_key(head);
    }
    return limits_.check_request(head, who);
}

client front::client_of(const http::request& req, const boost::asio::ip::address& peer) const {
    client who;
    if (keys_.configured()) {
        const auto given = req.find("authorization");
        who.key = keys_.table()->find(common::access::bearer_token(given ? *given : ""));
        if (who.key)
            who.identity = who.key->name;
        return who;
    }
    // Every X-Forwarded-For field, as one list: a proxy that adds its own field rather than
    // appending to the client's must not leave the client's to be read as the nearest hop.
    who.identity = proxies_.client_address(peer, req.joined("x-forwarded-for"));
    return who;
}

// Not a coroutine itself: it picks the coroutine that answers and returns it to be awaited.
asio::awaitable<void> front::handle(http::request& req, http::response_writer& out) {
    // Served without a key: probes (and the metrics with --metrics-public, or no keys at all).
    static constexpr std::array<route, 6> open_routes{{
        {"/health", http::method_get, &front::health},
        {"/liveness", http::method_get, &front::health},
        {"/readiness", http::method_get, &front::readiness},
        {"/metrics", http::method_get, &front::metrics_page},
        {"/ui", http::method_get, &front::ui_page},
        {"/ui/state", http::method_get, &front::ui_state},
    }};
    const std::string_view path = http::path_of(req.target());
    auto open = http::match_route(open_routes, path, req.method());
    if ((path == "/ui" || path == "/ui/state") && !cfg_.ui_public)
        open = {}; // names the replicas: on the admin listener only, unless asked for
    const bool keyed = keys_.configured();
    if (open.route && (!keyed || cfg_.metrics_public || open.route->serve != &front::metrics_page))
        return (this->*open.route->serve)(req, out);
    if (open.path_methods && !open.route)
        return unrouted(req, out, open.path_methods, "");
    client who = client_of(req, out.remote().address());
    if (keyed) {
        if (!who.key) {
            metrics_.access_refusals.with({"invalid_api_key"}).inc();
            out.note_refusal("invalid_api_key");
            return out.answer(invalid_key(req));
        }
        req.remove("authorization"); // a client's key is the router's business, not the engine's
        if (open.route)
            return (this->*open.route->serve)(req, out); // /metrics, with a key
    }
    if (auto refused = limits_.take_request(req, who)) {
        out.note_refusal("rate_limit_requests");
        return out.answer(std::move(*refused));
    }
    return serve_client(req, out, path, std::move(who));
}

asio::awaitable<void> front::serve_client(http::request& req, http::response_writer& out,
                                          std::string_view path, client who) {
    static constexpr std::array<client_route, 4> routes{{
        {"/v1/completions", http::method_post, &front::completions},
        {"/v1/chat/completions", http::method_post, &front::chat_completions},
        {"/v1/responses", http::method_post, &front::responses},
        {"/v1/models", http::method_get, &front::models},
    }};
    const auto match = http::match_route(routes, path, req.method());
    if (match.route)
        return (this->*match.route->serve)(req, out, std::move(who));
    const bool post = req.method() == bhttp::verb::post;
    if (post &&
        (std::find(forwarded_paths.begin(), forwarded_paths.end(), path) != forwarded_paths.end() ||
         path.starts_with("/v1/audio/")))
        return plans_.forwarded(req, out, std::move(who));
    if (path.starts_with("/v1/responses/"))
        return plans_.response_by_id(req, out, std::move(who));
    return unrouted(req, out, match.path_methods, "no route for ");
}

asio::awaitable<void> front::handle_admin(http::request& req, http::response_writer& out) {
    // The live page needs no token to read (its drain buttons send the token they are given).
    static constexpr std::array<route, 6> routes{{
        {"/health", http::method_get, &front::health},
        {"/liveness", http::method_get, &front::health},
        {"/readiness", http::method_get, &front::readiness},
        {"/metrics", http::method_get, &front::metrics_page},
        {"/ui", http::method_get, &front::ui_page},
        {"/ui/state", http::method_get, &front::ui_state_admin},
    }};
    // Before any route: a Host that is not this listener's, a cross-site request, or a read off
    // loopback without the token (admin::screen).
    if (auto refused = admin_.screen(req, out.remote().address().is_loopback()))
        return out.answer(std::move(*refused));
    const std::string_view path = http::path_of(req.target());
    const auto match = http::match_route(routes, path, req.method());
    if (match.route)
        return (this->*match.route->serve)(req, out);
    if (admin::handles(path))
        return admin_.handle(req, out);
    return unrouted(req, out, match.path_methods, "no admin route for ");
}

http::response front::invalid_key(const http::request& req) {
    openai::api_error e = openai::api_error::of(
        401, "Incorrect API key provided. Send it as 'Authorization: Bearer <key>'.");
    e.code = "invalid_api_key";
    auto res = openai::error_response(req, e);
    res.set(bhttp::field::www_authenticate, "Bearer");
    return res;
}

asio::awaitable<void> front::unrouted(const http::request& req, http::response_writer& out,
                                      unsigned path_methods, std::string_view not_found) {
    if (path_methods) {
        out.note_refusal("method_not_allowed");
        return out.answer(openai::method_not_allowed(req, path_methods));
    }
    out.note_refusal("no_route");
    return out.answer(openai::error_response(
        req, openai::api_error::not_found(std::string(not_found) +
                                          std::string(http::path_of(req.target())))));
}

asio::awaitable<void> front::completions(http::request& req, http::response_writer& out,
                                         client who) {
    return plans_.generate(req, out, body_kind::completions, std::move(who));
}

asio::awaitable<void> front::chat_completions(http::request& req, http::response_writer& out,
                                              client who) {
    return plans_.generate(req, out, body_kind::chat, std::move(who));
}

asio::awaitable<void> front::responses(http::request& req, http::response_writer& out, client who) {
    return plans_.generate(req, out, body_kind::responses, std::move(who));
}

asio::awaitable<void> front::health(http::request& req, http::response_writer& out) {
    return status_.health(req, out);
}

asio::awaitable<void> front::readiness(http::request& req, http::response_writer& out) {
    return status_.readiness(req, out);
}

asio::awaitable<void> front::metrics_page(http::request& req, http::response_writer& out) {
    return status_.metrics(req, out);
}

// Right after start a healthy replica's first /v1/models read may still be out: the answer waits
// for it (at most --models-timeout) rather than leave that replica's models out of the union.
asio::awaitable<void> front::models(http::request& req, http::response_writer& out, client) {
    const auto unread = [this] {
        for (const auto& r : pool_.all())
            if (r->healthy() && !r->models()->known)
                return true;
        return false;
    };
    if (unread()) {
        if (refresh_models_)
            co_await refresh_models_();
        asio::steady_timer timer(co_await asio::this_coro::executor);
        const auto until = std::chrono::steady_clock::now() + cfg_.monitor.models_timeout;
        while (unread() && std::chrono::steady_clock::now() < until) {
            timer.expires_after(std::chrono::milliseconds(10));
            co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
        }
    }
    co_await status_.models(req, out);
}

asio::awaitable<void> front::ui_page(http::request& req, http::response_writer& out) {
    auto res = http::make_response(req, bhttp::status::ok, std::string(live_page_html()),
                                   "text/html; charset=utf-8");
    res.set(bhttp::field::cache_control, "no-store");
    // Nothing from elsewhere, no framing by other sites.
    res.set("content-security-policy",
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
            "connect-src 'self'; img-src 'self'; frame-ancestors 'none'");
    res.set("x-content-type-options", "nosniff");
    return out.answer(std::move(res));
}

asio::awaitable<void> front::ui_state(http::request& req, http::response_writer& out) {
    return out.answer(no_store(req, counts_.live_json(false)));
}

asio::awaitable<void> front::ui_state_admin(http::request& req, http::response_writer& out) {
    return out.answer(no_store(req, counts_.live_json(true)));
}

} // namespace lanes::router
