// Replicas that die, never answer or have no metrics: the router keeps answering.
#include "traffic.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <csignal>

using namespace lanes;
using namespace lanes::test;
using namespace std::chrono_literals;
using verb = boost::beast::http::verb;

TEST_CASE("a replica killed mid-run: requests succeed elsewhere, it is ejected within 1 s",
          "[router][failover]") {
    // Slow sim replicas so requests are in flight when one dies.
    test::fleet f(4, {"--backend", "sim", "--sim-speedup", "2"}, {"--policy", "round_robin"});
    const auto prompts = shared_prefix_prompts(8, 16, 64, 16);
    run_stats stats;
    std::thread load([&] { stats = send_all(f.router->port(), prompts, 8, 16); });
    // Killed once the run is under way: a few requests answered, more in flight.
    REQUIRE(eventually(
        [&] { return fleet_counter(f.router->port(), "lanes_router_requests_total") >= 8; }, 10s));
    const std::string victim = f.replicas[1]->url();
    f.replicas[1]->signal(SIGKILL);
    const auto killed_at = std::chrono::steady_clock::now();
    const bool ejected = eventually(
        [&] {
            const auto list =
                nlohmann::json::parse(test::get(f.router->admin_port(), "/admin/replicas").body);
            for (const auto& r : list)
                if (r["url"] == victim)
                    return r["healthy"] == false;
            return false;
        },
        2s);
    const auto ejected_after = std::chrono::steady_clock::now() - killed_at;
    load.join();
    CHECK(ejected);
    CHECK(ejected_after <= 1s);
    CHECK(stats.failed == 0); // non-streamed: nothing reached a client before the failure
    CHECK(stats.ok == static_cast<int>(prompts.size()));
    // A clean exit with pooled upstream connections still open (a crash here once).
    f.router->signal(SIGTERM);
    CHECK(f.router->wait(10s) == 0);
}

TEST_CASE("no routable replica: 503 with Retry-After", "[router][failover]") {
    test::fleet f(1, {"--backend", "sim"}, {"--admin-insecure-loopback"});
    const auto port = f.router->port();
    REQUIRE(test::post_json(f.router->admin_port(), "/admin/replicas/drain",
                            nlohmann::json{{"url", f.replicas[0]->url()}}.dump())
                .status == 200);
    const auto r = test::post_json(port, "/v1/completions", R"({"prompt":"x"})");
    CHECK(r.status == 503);
    CHECK(r.header("retry-after") == "1");
    CHECK(nlohmann::json::parse(r.body)["error"]["code"] == 503);
}

TEST_CASE("a replica that never answers: 504 after --first-byte-timeout, not a hang",
          "[router][failover]") {
    // A backend that answers GET (health, metrics) at once and never answers a POST.
    std::atomic<int> posts{0};
    raw_backend backend(raw_backend::answering([&posts](std::string_view got) -> std::string {
        if (got.starts_with("GET "))
            return "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        if (got.starts_with("POST "))
            posts.fetch_add(1); // read, never answered
        return {};
    }));
    test::process router(LANES_ROUTER_BIN,
                         {"--host", "127.0.0.1", "--port", "0", "--replica", backend.url(),
                          "--first-byte-timeout", "300ms", "--max-retries", "0"});
    REQUIRE(test::wait_healthy(router.port(), 10s));
    const auto start = std::chrono::steady_clock::now();
    const auto r = test::post_json(router.port(), "/v1/completions",
                                   R"({"prompt":"anyone there?","max_tokens":2})");
    const auto took = std::chrono::steady_clock::now() - start;
    CHECK(r.status == 504);
    CHECK(r.body.find("did not answer within --first-byte-timeout") != std::string::npos);
    CHECK(took >= 250ms);
    CHECK(took < 3s);
    // Sent once: the health probes leave kept connections in the pool, and a timeout on one
    // is no sign of a stale connection, so the request is not sent again on a fresh one.
    CHECK(posts.load() == 1);
}

TEST_CASE("a replica without /metrics stays routable and is asked for them rarely",
          "[router][failover]") {
    // SGLang without --enable-metrics answers /metrics with 404: the replica is alive, so its
    // scrapes must not count as health failures (at 20 ms a scrape, two of them would eject it
    // within 50 ms, for good: each half-open moment would meet the next scrape first).
    std::atomic<int> scrapes{0}, probes{0};
    raw_backend backend(raw_backend::answering([&](std::string_view got) -> std::string {
        if (got.starts_with("GET /metrics ")) {
            scrapes.fetch_add(1);
            return "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found";
        }
        if (!got.starts_with("POST ")) {
            probes.fetch_add(1);
            return "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"; // /health
        }
        const std::string body = R"({"id":"cmpl-1","object":"text_completion",)"
                                 R"("choices":[{"index":0,"text":"ok"}]})";
        return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n\r\n" + body;
    }));
    test::process router(LANES_ROUTER_BIN,
                         {"--host", "127.0.0.1", "--port", "0", "--replica", backend.url(),
                          "--scrape-interval", "20ms", "--health-interval", "20ms",
                          "--failure-threshold", "2", "--max-retries", "0"});
    REQUIRE(test::wait_healthy(router.port(), 10s));
    // The monitor has been at work for a while: the 404 came back and ten probes went out since
    // (every tick of its loops that would have scraped again, had the 404 counted as a failure).
    REQUIRE(eventually([&] { return scrapes.load() >= 1; }, 5s));
    const int probes_then = probes.load();
    REQUIRE(eventually([&] { return probes.load() >= probes_then + 10; }, 5s));
    const auto list = nlohmann::json::parse(test::get(router.admin_port(), "/admin/replicas").body);
    REQUIRE(list.size() == 1);
    CHECK(list[0]["healthy"] == true);
    CHECK(list[0]["kv_usage"].is_null());
    for (int i = 0; i < 4; ++i)
        CHECK(test::post_json(router.port(), "/v1/completions", R"({"prompt":"hi","max_tokens":2})")
                  .status == 200);
    CHECK(scrapes.load() >= 1);
    CHECK(scrapes.load() <= 2); // then not again for --metrics-missing-interval (30 s)
}
