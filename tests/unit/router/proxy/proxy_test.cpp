// The router's front: its route table, refusals, and the retry loop, answering a fake client.
#include "router/config.hpp"
#include "router/proxy/proxy.hpp"

#include "router/policies/factory.hpp"
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

struct front {
    router::router_config cfg;
    router::replica_pool pool;
    router::router_metrics metrics;
    std::unique_ptr<router::proxy> p;

    // With route headers unless told not to: the cases read where each request went.
    explicit front(const std::vector<unsigned short>& ports, std::string policy = "round_robin",
                   bool route_headers = true) {
        cfg.policy = std::move(policy);
        cfg.access_log = false;
        cfg.upstream.route_headers = route_headers;
        for (const auto port : ports)
            pool.add(http::url{"127.0.0.1", port, ""});
        p = std::make_unique<router::proxy>(cfg, pool, metrics,
                                            router::make_policy(cfg.policy, cfg.policy_knobs));
    }

    fake_writer call(verb v, std::string_view target, std::string body = {},
                     bool admin_listener = false) {
        http::request req =
            make_request(v, target, std::move(body), {{"Content-Type", "application/json"}});
        fake_writer out;
        run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<void> {
            if (admin_listener)
                co_await p->handle_admin(req, out);
            else
                co_await p->handle(req, out);
            // Pooled connections keep a deadline timer that would hold this loop: close them.
            for (const auto& r : pool.all())
                while (auto conn = r->take_idle(ex))
                    conn->close();
        });
        return out;
    }
};

// A port nothing listens on.
unsigned short closed_port() {
    asio::io_context io;
    asio::ip::tcp::acceptor probe(io, {asio::ip::make_address("127.0.0.1"), 0});
    return probe.local_endpoint().port();
}

} // namespace

TEST_CASE("proxy: the route table answers liveness, metrics, 404 and 405", "[proxy]") {
    front f({});
    const auto health = f.call(verb::get, "/health");
    CHECK(health.status == 200);
    CHECK(health.content_type == "text/plain");
    const auto metrics = f.call(verb::get, "/metrics");
    CHECK(metrics.status == 200);
    CHECK(metrics.content_type.starts_with("text/plain; version=0.0.4"));
    CHECK(metrics.body.find("lanes_router_requests_total") != std::string::npos);
    const auto missing = f.call(verb::get, "/v2/nothing?x=1");
    CHECK(missing.status == 404);
    CHECK(json::parse(missing.body)["error"]["message"] == "no route for /v2/nothing");
    const auto get_completions = f.call(verb::get, "/v1/completions");
    CHECK(get_completions.status == 405);
    CHECK(get_completions.header("Allow") == "POST");
    const auto post_health = f.call(verb::post, "/health");
    CHECK(post_health.status == 405);
    CHECK(post_health.header("Allow") == "GET, HEAD");
    // Admin paths are not served here at all: they have a listener of their own.
    for (const char* path : {"/admin/replicas", "/list_workers"})
        CHECK(f.call(verb::get, path).status == 404);
    CHECK(f.call(verb::post, "/add_worker?url=http://127.0.0.1:9").status == 404);
}

TEST_CASE("proxy: the admin listener serves the admin API, health and metrics, no traffic",
          "[proxy][admin]") {
    front f({});
    const auto admin = [&f](verb v, std::string_view target) {
        return f.call(v, target, {}, true);
    };
    CHECK(admin(verb::get, "/admin/replicas").status == 200); // loopback: the fake's address
    CHECK(admin(verb::get, "/list_workers").status == 200);
    CHECK(admin(verb::get, "/health").status == 200);
    CHECK(admin(verb::get, "/readiness").status == 503); // no replica passes its probes
    CHECK(admin(verb::get, "/metrics").body.find("lanes_router_requests_total") !=
          std::string::npos);
    const auto none = admin(verb::post, "/v1/completions");
    CHECK(none.status == 404);
    CHECK(json::parse(none.body)["error"]["message"] == "no admin route for /v1/completions");
    CHECK(admin(verb::post, "/metrics").status == 405);
}

TEST_CASE("proxy: a body it cannot read is a 400, no replica a 503 with Retry-After", "[proxy]") {
    front f({});
    const auto bad = f.call(verb::post, "/v1/completions", "{not json");
    CHECK(bad.status == 400);
    CHECK(json::parse(bad.body)["error"]["type"] == "BadRequestError");
    const auto none = f.call(verb::post, "/v1/completions", R"({"prompt":"hi"})");
    CHECK(none.status == 503);
    CHECK(none.header("Retry-After") == "1");
    CHECK_FALSE(none.header("x-request-id").empty());
}

TEST_CASE("proxy: answers name no replica unless --route-headers asks", "[proxy]") {
    test_server ts({});
    router::router_config defaults;
    CHECK_FALSE(defaults.upstream.route_headers); // the default keeps the fleet's layout hidden
    front f({ts.port}, "round_robin", defaults.upstream.route_headers);
    const auto out = f.call(verb::post, "/v1/completions", R"({"prompt":"hello"})");
    CHECK(out.status == 200);
    CHECK(out.header("x-lanes-replica").empty());
    CHECK(out.header("x-lanes-route-reason").empty());
    CHECK_FALSE(out.header("x-request-id").empty());
}

TEST_CASE("proxy: a failed attempt is retried on another replica", "[proxy]") {
    test_server ts({});
    front f({closed_port(), ts.port});
    const auto out = f.call(verb::post, "/v1/completions", R"({"prompt":"hello"})");
    CHECK(out.status == 200);
    CHECK(out.body == R"({"prompt":"hello"})"); // the test server echoes
    CHECK(out.header("x-lanes-replica") == "http://127.0.0.1:" + std::to_string(ts.port));
    CHECK(out.header("x-lanes-route-reason") == "round_robin");
    CHECK(f.metrics.retries.value() == 1);
    // With every replica down, the last failure is named in a 502.
    front dead({closed_port(), closed_port()});
    const auto failed = dead.call(verb::post, "/v1/completions", R"({"prompt":"hello"})");
    CHECK(failed.status == 502);
    CHECK(json::parse(failed.body)["error"]["message"].get<std::string>().starts_with(
        "every replica tried failed: connect: "));
}

TEST_CASE("proxy: the request id is the client's when it sends one", "[proxy]") {
    test_server ts({});
    front f({ts.port});
    http::request req;
    req.start(verb::post, "POST", "/v1/completions", 11);
    req.add("X-Request-Id", "mine-1");
    req.body() = R"({"prompt":"x"})";
    fake_writer out;
    run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        co_await f.p->handle(req, out);
        for (const auto& r : f.pool.all())
            while (auto conn = r->take_idle(ex))
                conn->close();
    });
    CHECK(out.status == 200);
    CHECK(out.header("x-request-id") == "mine-1");
}
