#include "router/admin.hpp"

#include "common/http/parse.hpp"
#include "common/http/routes.hpp"
#include "common/json_depth.hpp"
#include "common/log.hpp"
#include "common/openai/error.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>

namespace lanes::router {

namespace http = common::http;
namespace bhttp = boost::beast::http;
using status = bhttp::status;

namespace {

http::response error(const http::request& req, int code, std::string message) {
    return common::openai::error_response(req,
                                          common::openai::api_error::of(code, std::move(message)));
}

// Value of `key` in the query string (no percent-decoding beyond %3A and %2F, which URLs need).
std::string query_param(std::string_view target, std::string_view key) {
    const auto q = target.find('?');
    if (q == std::string_view::npos)
        return {};
    std::string_view rest = target.substr(q + 1);
    while (!rest.empty()) {
        const auto amp = rest.find('&');
        std::string_view item = rest.substr(0, amp);
        if (item.starts_with(key) && item.size() > key.size() && item[key.size()] == '=') {
            std::string value(item.substr(key.size() + 1));
            for (auto [from, to] :
                 {std::pair{"%3A", ":"}, {"%3a", ":"}, {"%2F", "/"}, {"%2f", "/"}})
                for (std::size_t p; (p = value.find(from)) != std::string::npos;)
                    value.replace(p, 3, to);
            return value;
        }
        rest = amp == std::string_view::npos ? std::string_view{} : rest.substr(amp + 1);
    }
    return {};
}

// The replica URL of a request: ?url= or a JSON body {"url": ...}.
std::string url_argument(const http::request& req) {
    if (auto u = query_param(req.target(), "url"); !u.empty())
        return u;
    // {"url": ...} nests one level; a deeper body is not one (nor parsed into a DOM).
    if (common::nests_deeper_than(req.body(), 4))
        return {};
    const auto body = nlohmann::json::parse(req.body(), nullptr, false);
    if (body.is_object() && body.contains("url") && body["url"].is_string())
        return body["url"].get<std::string>();
    return {};
}

// The media type of a Content-Type value, without its parameters.
std::string_view media_type(std::string_view value) {
    return http::trim_ows(value.substr(0, value.find(';')));
}

} // namespace

nlohmann::json models_of(const replica& r) {
    const auto m = r.models();
    return m->known ? nlohmann::json(m->ids) : nlohmann::json(nullptr);
}

nlohmann::json replica_state(replica& r) {
    const scraped_stats s = r.stats();
    auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
    return {{"url", r.id()},
            {"healthy", r.healthy()},
            {"draining", r.draining.load()},
            {"models", models_of(r)},
            {"inflight", r.traffic.inflight.load()},
            {"kv_usage", opt(s.kv_usage)},
            {"waiting", opt(s.waiting)},
            {"running", opt(s.running)},
            {"prefix_cache_hits", opt(s.prefix_cache_hits)},
            {"prefix_cache_queries", opt(s.prefix_cache_queries)},
            {"num_gpu_blocks", opt(s.num_blocks)},
            {"requests_total", r.traffic.requests_total.load()},
            {"source", r.source}};
}

std::string replicas_json(replica_pool& pool) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& r : pool.all())
        list.push_back(replica_state(*r));
    return list.dump();
}

bool admin::handles(std::string_view path) {
    return path.starts_with("/admin/") || path == "/add_worker" || path == "/remove_worker" ||
           path == "/list_workers";
}

boost::asio::awaitable<void> admin::handle(http::request& req, http::response_writer& out) {
    co_await out.send(respond(req, out.remote().address().is_loopback()));
}

std::optional<http::response> admin::token_refusal(const http::request& req) const {
    const auto given = req.find("authorization");
    const std::string_view token = given ? common::access::bearer_token(*given) : "";
    if (token.empty() || !common::access::same(common::access::sha256(token), *access_.token))
        return error(req, 401, "missing or wrong 'Authorization: Bearer' admin token");
    return std::nullopt;
}

std::optional<http::response> admin::refusal(const http::request& req, bool loopback) const {
    const bool change = req.method() != bhttp::verb::get && req.method() != bhttp::verb::head;
    if (access_.token)
        return token_refusal(req);
    if (!loopback)
        return error(req, 403, "without --admin-token the admin API answers loopback clients only");
    if (!change)
        return std::nullopt;
    if (!access_.insecure_loopback)
        return error(req, 403,
                     "changing the fleet needs --admin-token (or, for loopback clients, "
                     "--admin-insecure-loopback)");
    const auto type = req.find("content-type");
    if (!type || !http::iequals_ascii(media_type(*type), "application/json"))
        return error(req, 415,
                     "a change without the admin token needs Content-Type: application/json");
    return std::nullopt;
}

namespace {

// The host part of a Host header value: "[::1]:8090" -> "::1", "name:8090" -> "name".
std::string_view host_part(std::string_view host) {
    if (host.starts_with('[')) {
        const auto close = host.find(']');
        return close == std::string_view::npos ? host : host.substr(1, close - 1);
    }
    const auto colon = host.rfind(':');
    if (colon != std::string_view::npos && host.find(':') == colon)
        return host.substr(0, colon);
    return host;
}

bool is_ip_literal(std::string_view host) {
    boost::system::error_code ec;
    (void)boost::asio::ip::make_address(std::string(host), ec);
    return !ec;
}

} // namespace

std::optional<http::response> admin::screen(const http::request& req, bool loopback) const {
    if (const auto host = req.find("host")) {
        std::string_view name = host_part(*host);
        if (name.ends_with('.'))
            name.remove_suffix(1);
        const bool ours =
            is_ip_literal(name) || http::iequals_ascii(name, "localhost") ||
            std::any_of(access_.server_names.begin(), access_.server_names.end(),
                        [name](const std::string& n) { return http::iequals_ascii(name, n); });
        if (!ours)
            return error(req, 421,
                         "the admin listener does not answer for host '" + std::string(*host) +
                             "' (IP addresses, localhost and --admin-server-name only)");
        // A browser names the page's origin; a page of another origin may not call in.
        if (const auto origin = req.find("origin")) {
            const std::string_view o = *origin;
            const auto scheme_end = o.find("://");
            if (scheme_end == std::string_view::npos ||
                !http::iequals_ascii(o.substr(scheme_end + 3), *host))
                return error(req, 403, "cross-origin requests to the admin listener are refused");
        }
    }
    if (const auto site = req.find("sec-fetch-site");
        site && !http::iequals_ascii(*site, "same-origin") && !http::iequals_ascii(*site, "none"))
        return error(req, 403, "cross-site requests to the admin listener are refused");
    if (loopback)
        return std::nullopt;
    const std::string_view path = http::path_of(req.target());
    if (path == "/health" || path == "/liveness" || path == "/readiness" || path == "/ui")
        return std::nullopt; // probes, and a page that holds no data of its own
    if (!access_.token)
        return error(req, 403,
                     "without --admin-token the admin listener answers loopback "
                     "clients only");
    return token_refusal(req);
}

// The admin API as a plain function of the request (no I/O): who asks, then the route table.
http::response admin::respond(const http::request& req, bool loopback) {
    if (auto refused = refusal(req, loopback))
        return std::move(*refused);
    struct route {
        std::string_view path;
        unsigned methods;
        http::response (admin::*serve)(const http::request&);
    };
    static constexpr std::array<route, 8> routes{{
        {"/admin/replicas", http::method_get, &admin::list},
        {"/admin/replicas", http::method_post, &admin::add},
        {"/admin/replicas", http::method_delete, &admin::remove},
        {"/admin/replicas/drain", http::method_post, &admin::drain},
        {"/admin/replicas/undrain", http::method_post, &admin::undrain},
        {"/list_workers", http::method_get, &admin::list_urls},
        {"/add_worker", http::method_post, &admin::add},
        {"/remove_worker", http::method_post, &admin::remove},
    }};
    // The route and method first, so a wrong one is named as such: 404 for an unknown path,
    // 405 (with Allow) for a known path asked with another method.
    const std::string_view path = http::path_of(req.target());
    const auto match = http::match_route(routes, path, req.method());
    if (!match.path_methods)
        return error(req, 404, "no admin route for " + std::string(path));
    if (!match.route)
        return common::openai::method_not_allowed(req, match.path_methods);
    return (this->*match.route->serve)(req);
}

http::response admin::list(const http::request& req) {
    return http::make_response(req, status::ok, replicas_json(pool_));
}

http::response admin::list_urls(const http::request& req) {
    nlohmann::json urls = nlohmann::json::array();
    for (const auto& r : pool_.all())
        urls.push_back(r->id());
    return http::make_response(req, status::ok, nlohmann::json{{"urls", urls}}.dump());
}

std::optional<common::http::url> admin::replica_argument(const http::request& req,
                                                         http::response& refusal) {
    const std::string url_text = url_argument(req);
    std::string why;
    auto u = common::http::parse_url(url_text, &why);
    if (!u)
        refusal =
            error(req, 400, url_text.empty() ? "give the replica as ?url= or {\"url\": ...}" : why);
    return u;
}

http::response admin::add(const http::request& req) {
    http::response refusal;
    const auto u = replica_argument(req, refusal);
    if (!u)
        return refusal;
    const std::string id = u->str();
    if (!pool_.add(*u, "admin"))
        return error(req, 409, id + " is already a replica");
    LANES_LOG(info, "admin", "added " << id);
    return http::make_response(req, status::created, nlohmann::json{{"added", id}}.dump());
}

std::shared_ptr<replica> admin::replica_named(const http::request& req, http::response& refusal) {
    const auto u = replica_argument(req, refusal);
    if (!u)
        return nullptr;
    auto r = pool_.find(u->str());
    if (!r)
        refusal = error(req, 404, u->str() + " is not a replica");
    return r;
}

http::response admin::remove(const http::request& req) {
    http::response refusal;
    const auto r = replica_named(req, refusal);
    if (!r)
        return refusal;
    const std::string& id = r->id();
    if (r->source != "flag" && r->source != "admin")
        return error(req, 409,
                     id + " comes from --replica-dns " + r->source +
                         " and would be added again at its next resolution; drain it instead");
    pool_.remove(id);
    LANES_LOG(info, "admin", "removed " << id);
    return http::make_response(req, status::ok, nlohmann::json{{"removed", id}}.dump());
}

http::response admin::drain(const http::request& req) {
    return set_draining(req, true);
}

http::response admin::undrain(const http::request& req) {
    return set_draining(req, false);
}

http::response admin::set_draining(const http::request& req, bool draining) {
    http::response refusal;
    const auto r = replica_named(req, refusal);
    if (!r)
        return refusal;
    r->draining.store(draining);
    const std::string what = draining ? "draining" : "undrained";
    LANES_LOG(info, "admin", what << " " << r->id());
    return http::make_response(req, status::ok, nlohmann::json{{what, r->id()}}.dump());
}

} // namespace lanes::router
