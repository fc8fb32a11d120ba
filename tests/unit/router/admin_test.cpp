// The admin API as a function of the request: every route, method and authorization case.
#include "router/admin.hpp"

#include "tests/unit/common/http/fake_writer.hpp"
#include "tests/unit/common/http/test_servers.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace lanes;
using namespace lanes::common::http::test;
namespace router = lanes::router;
using verb = boost::beast::http::verb;
using nlohmann::json;

namespace {

// A request as a local tool sends it: JSON content type, and the Authorization given if any.
http::request make(verb v, std::string_view target, std::string body = {},
                   std::string_view authorization = {},
                   std::string_view content_type = "application/json") {
    http::header_list headers;
    if (!authorization.empty())
        headers.emplace_back("Authorization", std::string(authorization));
    if (!content_type.empty())
        headers.emplace_back("Content-Type", std::string(content_type));
    return make_request(v, target, std::move(body), headers);
}

router::admin::access with_token(std::string_view token) {
    return {lanes::common::access::sha256(token), false};
}

// No token, loopback clients may change the fleet.
const router::admin::access insecure_loopback{std::nullopt, true};

std::string error_type(const http::response& res) {
    return json::parse(res.body())["error"]["type"];
}

constexpr std::string_view one = "http://127.0.0.1:9001";
constexpr std::string_view two = "http://127.0.0.1:9002";

} // namespace

TEST_CASE("admin: without a token loopback clients may read, and change nothing", "[admin]") {
    router::replica_pool pool;
    router::admin a({}, pool);
    CHECK(a.respond(make(verb::get, "/admin/replicas"), true).result_int() == 200);
    CHECK(a.respond(make(verb::head, "/admin/replicas"), true).result_int() == 200);
    const auto remote = a.respond(make(verb::get, "/admin/replicas"), false);
    CHECK(remote.result_int() == 403);
    CHECK(error_type(remote) == "PermissionDeniedError");
    const auto change =
        a.respond(make(verb::post, "/admin/replicas", json{{"url", one}}.dump()), true);
    CHECK(change.result_int() == 403);
    CHECK(json::parse(change.body())["error"]["message"].get<std::string>().find(
              "--admin-insecure-loopback") != std::string::npos);
    CHECK(pool.all().empty());
}

TEST_CASE("admin: --admin-insecure-loopback changes need loopback and a JSON body type",
          "[admin]") {
    router::replica_pool pool;
    router::admin a(insecure_loopback, pool);
    const std::string add = "/add_worker?url=" + std::string(one);
    CHECK(a.respond(make(verb::post, add), false).result_int() == 403);
    for (const std::string_view type : {"", "text/plain", "application/x-www-form-urlencoded",
                                        "multipart/form-data", "application/jsonx"}) {
        INFO(type);
        const auto res = a.respond(make(verb::post, add, "", "", type), true);
        CHECK(res.result_int() == 415);
    }
    CHECK(pool.all().empty());
    CHECK(a.respond(make(verb::post, add, "", "", " Application/JSON ; charset=utf-8"), true)
              .result_int() == 201);
    CHECK(pool.all().size() == 1);
}

TEST_CASE("admin: with a token every call needs it, from anywhere", "[admin]") {
    router::replica_pool pool;
    router::admin a(with_token("s3cret"), pool);
    for (const bool loopback : {true, false}) {
        const auto none = a.respond(make(verb::get, "/admin/replicas"), loopback);
        CHECK(none.result_int() == 401);
        CHECK(error_type(none) == "AuthenticationError");
        CHECK(a.respond(make(verb::get, "/admin/replicas", "", "Bearer wrong"), loopback)
                  .result_int() == 401);
        CHECK(a.respond(make(verb::get, "/admin/replicas", "", "s3cret"), loopback).result_int() ==
              401); // the scheme is part of it
        CHECK(a.respond(make(verb::get, "/admin/replicas", "", "Bearer s3cret"), loopback)
                  .result_int() == 200);
        CHECK(a.respond(make(verb::get, "/admin/replicas", "", "bearer  s3cret "), loopback)
                  .result_int() == 200); // the scheme in any case, blanks around the token
        // With the token no content type is asked for (a browser cannot add the header).
        CHECK(a.respond(make(verb::post, "/add_worker?url=" + std::string(loopback ? one : two), "",
                             "Bearer s3cret", ""),
                        loopback)
                  .result_int() == 201);
    }
}

TEST_CASE("admin: add, list, drain, undrain and remove replicas", "[admin]") {
    router::replica_pool pool;
    router::admin a(insecure_loopback, pool);
    const auto call = [&](verb v, std::string target, std::string body = {}) {
        return a.respond(make(v, target, std::move(body)), true);
    };
    const auto added = call(verb::post, "/admin/replicas", json{{"url", one}}.dump());
    CHECK(added.result_int() == 201);
    CHECK(json::parse(added.body())["added"] == one);
    CHECK(call(verb::post, "/admin/replicas", json{{"url", one}}.dump()).result_int() == 409);
    CHECK(call(verb::post, "/add_worker?url=http%3A%2F%2F127.0.0.1%3A9002").result_int() == 201);
    CHECK(pool.all().size() == 2);

    const auto list = json::parse(call(verb::get, "/admin/replicas").body());
    REQUIRE(list.size() == 2);
    CHECK(list[0]["url"] == one);
    CHECK(list[0]["healthy"] == true);
    CHECK(list[0]["draining"] == false);
    CHECK(list[0]["kv_usage"].is_null()); // no scrape yet
    CHECK(list[1]["source"] == "admin");
    CHECK(json::parse(call(verb::get, "/list_workers").body())["urls"] == json::array({one, two}));
    CHECK(call(verb::head, "/admin/replicas").result_int() == 200);

    CHECK(call(verb::post, "/admin/replicas/drain", json{{"url", one}}.dump()).result_int() == 200);
    CHECK(pool.find(std::string(one))->draining.load());
    CHECK(call(verb::post, "/admin/replicas/undrain", json{{"url", one}}.dump()).result_int() ==
          200);
    CHECK_FALSE(pool.find(std::string(one))->draining.load());
    CHECK(call(verb::post, "/admin/replicas/drain", json{{"url", "http://127.0.0.1:1"}}.dump())
              .result_int() == 404);

    CHECK(call(verb::delete_, "/admin/replicas?url=" + std::string(one)).result_int() == 200);
    CHECK(call(verb::delete_, "/admin/replicas?url=" + std::string(one)).result_int() == 404);
    CHECK(call(verb::post, "/remove_worker?url=" + std::string(two)).result_int() == 200);
    CHECK(pool.all().empty());
}

TEST_CASE("admin: bad arguments, unknown paths and wrong methods", "[admin]") {
    router::replica_pool pool;
    REQUIRE(pool.add(*http::parse_url(one), "replicas.svc:8000")); // from DNS
    router::admin a(insecure_loopback, pool);
    const auto call = [&](verb v, std::string target, std::string body = {}) {
        return a.respond(make(v, target, std::move(body)), true);
    };
    CHECK(call(verb::post, "/admin/replicas").result_int() == 400); // no URL at all
    CHECK(call(verb::post, "/admin/replicas", R"({"url":"ftp://x"})").result_int() == 400);
    CHECK(call(verb::post, "/admin/replicas", "not json").result_int() == 400);
    // A DNS replica would come back at the next resolution: removing it is refused.
    const auto dns = call(verb::delete_, "/admin/replicas?url=" + std::string(one));
    CHECK(dns.result_int() == 409);
    CHECK(json::parse(dns.body())["error"]["message"].get<std::string>().find("drain it") !=
          std::string::npos);
    CHECK(call(verb::get, "/admin/nothing").result_int() == 404);
    const struct {
        verb v;
        std::string_view path, allow;
    } wrong[] = {{verb::put, "/admin/replicas", "GET, HEAD, POST, DELETE"},
                 {verb::get, "/admin/replicas/drain", "POST"},
                 {verb::delete_, "/admin/replicas/undrain", "POST"},
                 {verb::post, "/list_workers", "GET, HEAD"},
                 {verb::get, "/add_worker", "POST"},
                 {verb::get, "/remove_worker", "POST"}};
    for (const auto& w : wrong) {
        INFO(w.path);
        const auto res = call(w.v, std::string(w.path) + "?url=" + std::string(one));
        CHECK(res.result_int() == 405);
        CHECK(res[boost::beast::http::field::allow] == w.allow);
        CHECK(error_type(res) == "MethodNotAllowedError");
    }
    CHECK(pool.all().size() == 1); // nothing was changed by a refused call
}

TEST_CASE("admin::handles names its paths, and handle answers through the writer", "[admin]") {
    CHECK(router::admin::handles("/admin/replicas"));
    CHECK(router::admin::handles("/admin/anything"));
    CHECK(router::admin::handles("/add_worker"));
    CHECK(router::admin::handles("/list_workers"));
    CHECK_FALSE(router::admin::handles("/v1/completions"));
    CHECK_FALSE(router::admin::handles("/administrator"));
    router::replica_pool pool;
    router::admin a({}, pool);
    fake_writer out;
    out.remote_ = {asio::ip::make_address("10.1.2.3"), 5000}; // not loopback: refused
    http::request req = make(verb::get, "/admin/replicas");
    run_coroutine(
        [&](asio::any_io_executor) -> asio::awaitable<void> { co_await a.handle(req, out); });
    CHECK(out.status == 403);
    CHECK(out.content_type == "application/json");
}

namespace {

http::request with_headers(std::string_view target, http::header_list headers, verb v = verb::get) {
    return make_request(v, target, {}, std::move(headers));
}

} // namespace

TEST_CASE("admin screen: a Host that is not the listener's is a 421 (DNS rebinding)", "[admin]") {
    router::replica_pool pool;
    router::admin::access who{std::nullopt, true, {"router.internal"}};
    router::admin a(who, pool);
    auto status = [&](std::string_view host) {
        const auto refused =
            a.screen(with_headers("/ui/state", {{"Host", std::string(host)}}), true);
        return refused ? refused->result_int() : 0;
    };
    CHECK(status("127.0.0.1:8090") == 0);
    CHECK(status("[::1]:8090") == 0);
    CHECK(status("localhost:8090") == 0);
    CHECK(status("LOCALHOST") == 0);
    CHECK(status("localhost.:8090") == 0);
    CHECK(status("router.internal:8090") == 0);
    CHECK(status("attacker.example:8090") == 421);
    CHECK(status("attacker.example") == 421);
    CHECK(status("127.0.0.1.attacker.example") == 421);
    // A rebound name reading the fleet, and adding a replica.
    const auto post = with_headers(
        "/admin/replicas",
        {{"Host", "attacker.example:8090"}, {"Content-Type", "application/json"}}, verb::post);
    const auto refused = a.screen(post, true);
    REQUIRE(refused);
    CHECK(refused->result_int() == 421);
    CHECK(pool.all().empty());
}

TEST_CASE("admin screen: cross-site browser requests are a 403", "[admin]") {
    router::replica_pool pool;
    router::admin a(insecure_loopback, pool);
    auto status = [&](http::header_list headers) {
        const auto refused = a.screen(with_headers("/admin/replicas", std::move(headers)), true);
        return refused ? refused->result_int() : 0;
    };
    CHECK(status({{"Host", "127.0.0.1:8090"}, {"Origin", "http://127.0.0.1:8090"}}) == 0);
    CHECK(status({{"Host", "localhost:8090"}, {"Origin", "http://localhost:3000"}}) == 403);
    CHECK(status({{"Host", "localhost:8090"}, {"Origin", "null"}}) == 403);
    CHECK(status({{"Host", "localhost:8090"}, {"Sec-Fetch-Site", "same-origin"}}) == 0);
    CHECK(status({{"Host", "localhost:8090"}, {"Sec-Fetch-Site", "none"}}) == 0);
    CHECK(status({{"Host", "localhost:8090"}, {"Sec-Fetch-Site", "cross-site"}}) == 403);
    CHECK(status({{"Host", "localhost:8090"}, {"Sec-Fetch-Site", "same-site"}}) == 403);
    CHECK(status({}) == 0); // a tool without Host (HTTP/1.0) or browser headers
}

TEST_CASE("admin screen: off loopback, reads need the token, probes and the page do not",
          "[admin]") {
    router::replica_pool pool;
    router::admin open_admin({}, pool);
    router::admin guarded(with_token("s3cret-admin-token"), pool);
    auto status = [](const router::admin& a, std::string_view path, http::header_list h = {}) {
        const auto refused = a.screen(with_headers(path, std::move(h)), false);
        return refused ? refused->result_int() : 0;
    };
    for (const char* probe : {"/health", "/liveness", "/readiness", "/ui"}) {
        CHECK(status(open_admin, probe) == 0);
        CHECK(status(guarded, probe) == 0);
    }
    CHECK(status(open_admin, "/ui/state") == 403);
    CHECK(status(open_admin, "/metrics") == 403);
    CHECK(status(guarded, "/ui/state") == 401);
    CHECK(status(guarded, "/metrics", {{"Authorization", "Bearer wrong"}}) == 401);
    CHECK(status(guarded, "/ui/state", {{"Authorization", "Bearer s3cret-admin-token"}}) == 0);
    // Loopback clients read as before.
    CHECK_FALSE(open_admin.screen(with_headers("/ui/state", {}), true));
}
