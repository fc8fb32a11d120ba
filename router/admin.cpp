#include "router/admin.hpp"

#include "common/log.hpp"
#include "common/openai/request.hpp"

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

http::response error(const http::request& req, int code, std::string type, std::string message) {
    common::openai::api_error e;
    e.status = code;
    e.type = std::move(type);
    e.message = std::move(message);
    return http::make_response(req, static_cast<status>(code), common::openai::error_json(e));
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
    const std::string_view target(req.target().data(), req.target().size());
    if (auto u = query_param(target, "url"); !u.empty())
        return u;
    const auto body = nlohmann::json::parse(req.body(), nullptr, false);
    if (body.is_object() && body.contains("url") && body["url"].is_string())
        return body["url"].get<std::string>();
    return {};
}

bool authorized(const std::string& token, const http::request& req, bool loopback) {
    if (token.empty())
        return loopback;
    const auto given = req.find("authorization");
    return given && *given == "Bearer " + token;
}

} // namespace

std::string replicas_json(replica_pool& pool) {
    nlohmann::json list = nlohmann::json::array();
    for (const auto& r : pool.all()) {
        const scraped_stats s = r->stats();
        auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
        list.push_back({{"url", r->id()},
                        {"healthy", r->healthy()},
                        {"draining", r->draining.load()},
                        {"inflight", r->inflight.load()},
                        {"kv_usage", opt(s.kv_usage)},
                        {"waiting", opt(s.waiting)},
                        {"running", opt(s.running)},
                        {"prefix_cache_hits", opt(s.prefix_cache_hits)},
                        {"prefix_cache_queries", opt(s.prefix_cache_queries)},
                        {"num_gpu_blocks", opt(s.num_blocks)},
                        {"requests_total", r->requests_total.load()},
                        {"source", r->source}});
    }
    return list.dump();
}

bool admin::handles(std::string_view path) {
    return path.starts_with("/admin/") || path == "/add_worker" || path == "/remove_worker" ||
           path == "/list_workers";
}

boost::asio::awaitable<void> admin::handle(http::request& req, http::response_writer& out) {
    co_await out.send(respond(req, out.remote().address().is_loopback()));
}

// The admin API as a plain function of the request (no I/O).
http::response admin::respond(const http::request& req, bool loopback) {
    const std::string_view target(req.target().data(), req.target().size());
    const std::string_view path = target.substr(0, target.find('?'));
    const auto method = req.method();
    if (!authorized(token_, req, loopback))
        return token_.empty() ? error(req, 403, "PermissionDeniedError",
                                      "the admin API answers loopback clients only; start the "
                                      "router with --admin-token to use it remotely")
                              : error(req, 401, "AuthenticationError",
                                      "missing or wrong 'Authorization: Bearer' token");
    // The route and method first, so a wrong one is named as such: 404 for an unknown path,
    // 405 (with Allow) for a known path asked with another method.
    struct route {
        std::string_view path;
        std::string_view allow;
    };
    static constexpr std::array<route, 6> routes{{{"/list_workers", "GET"},
                                                  {"/admin/replicas", "GET, POST, DELETE"},
                                                  {"/add_worker", "POST"},
                                                  {"/remove_worker", "POST"},
                                                  {"/admin/replicas/drain", "POST"},
                                                  {"/admin/replicas/undrain", "POST"}}};
    const auto known =
        std::find_if(routes.begin(), routes.end(), [&](const route& r) { return r.path == path; });
    if (known == routes.end())
        return error(req, 404, "NotFoundError", "no admin route for " + std::string(path));
    const std::string_view method_name(req.method_string().data(), req.method_string().size());
    const bool read_only = method == bhttp::verb::get || method == bhttp::verb::head;
    bool allowed = false;
    for (std::string_view rest = known->allow; !rest.empty();) {
        const auto comma = rest.find(", ");
        const std::string_view one = rest.substr(0, comma);
        allowed = allowed || one == method_name || (one == "GET" && read_only);
        rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 2);
    }
    if (!allowed) {
        auto res = error(req, 405, "MethodNotAllowedError",
                         std::string(path) + " takes " + std::string(known->allow));
        res.set(bhttp::field::allow, known->allow);
        return res;
    }
    if (path == "/list_workers") { // GET or HEAD
        nlohmann::json urls = nlohmann::json::array();
        for (const auto& r : pool_.all())
            urls.push_back(r->id());
        return http::make_response(req, status::ok, nlohmann::json{{"urls", urls}}.dump());
    }
    if (path == "/admin/replicas" && read_only)
        return http::make_response(req, status::ok, replicas_json(pool_));
    const std::string url_text = url_argument(req);
    std::string why;
    const auto u = common::http::parse_url(url_text, &why);
    if (!u)
        return error(req, 400, "BadRequestError",
                     url_text.empty() ? "give the replica as ?url= or {\"url\": ...}" : why);
    const std::string id = u->str();
    const bool add =
        path == "/add_worker" || (path == "/admin/replicas" && method == bhttp::verb::post);
    const bool remove =
        path == "/remove_worker" || (path == "/admin/replicas" && method == bhttp::verb::delete_);
    const bool drain = path == "/admin/replicas/drain"; // else undrain, the last route left
    if (add) {
        if (!pool_.add(*u, "admin"))
            return error(req, 409, "ConflictError", id + " is already a replica");
        LANES_LOG(info, "admin", "added " << id);
        return http::make_response(req, status::created, nlohmann::json{{"added", id}}.dump());
    }
    auto r = pool_.find(id);
    if (!r)
        return error(req, 404, "NotFoundError", id + " is not a replica");
    if (remove && r->source != "flag" && r->source != "admin")
        return error(req, 409, "ConflictError",
                     id + " comes from --replica-dns " + r->source +
                         " and would be added again at its next resolution; drain it instead");
    if (remove)
        pool_.remove(id);
    else
        r->draining.store(drain);
    const std::string what = remove ? "removed" : drain ? "draining" : "undrained";
    LANES_LOG(info, "admin", what << " " << id);
    return http::make_response(req, status::ok, nlohmann::json{{what, id}}.dump());
}

} // namespace lanes::router
