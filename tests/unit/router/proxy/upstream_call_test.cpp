// One attempt on one replica, against a lanes server and canned answers, answering a fake client.
#include "router/proxy/upstream_call.hpp"

#include "tests/unit/common/http/fake_writer.hpp"
#include "tests/unit/common/http/test_servers.hpp"

#include <catch2/catch.hpp>

using namespace lanes;
using namespace lanes::common::http::test;
namespace router = lanes::router;

namespace {

// An attempt of `method target` with `body` on the replica at `port`, answered to `out`.
struct attempt {
    router::upstream_config cfg;
    router::router_metrics metrics;
    std::shared_ptr<router::replica> target;
    router::decision choice{0, router::route_reason::prefix_match, 3};
    bool kept = false; // the connection went back to the replica's pool

    explicit attempt(unsigned short port, router::health_config health = {})
        : target(std::make_shared<router::replica>(http::url{"127.0.0.1", port, ""}, health)) {
        cfg.route_headers = true; // the cases read where each answer came from
    }

    router::attempt_result run(fake_writer& out, std::string target_path = "/v1/completions",
                               std::string body = R"({"prompt":"hi"})") {
        http::request req;
        req.start(bhttp::verb::post, "POST", target_path, 11);
        req.add("Host", "router");
        req.add("Content-Type", "application/json");
        req.add("Connection", "keep-alive"); // hop-by-hop: not forwarded
        req.add("X-Custom", "kept");
        req.body() = std::move(body);
        router::attempt_result result;
        run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<void> {
            router::upstream_call call(cfg, metrics, target, choice, "req-1",
                                       std::chrono::steady_clock::now());
            result = co_await call.run(req, out);
            // A pooled connection keeps its read deadline's timer, which would hold the
            // io_context until it expires: closing it lets the test's loop end.
            if (auto pooled = target->take_idle(ex)) {
                kept = true;
                pooled->close();
            }
        });
        return result;
    }
};

} // namespace

TEST_CASE("upstream call: a whole answer is relayed with the route headers, its connection kept",
          "[upstream]") {
    test_server ts({});
    attempt a(ts.port);
    fake_writer out;
    const auto r = a.run(out, "/echo", "hello");
    CHECK(r.answered);
    CHECK(r.sent_any);
    CHECK_FALSE(r.client_gone);
    CHECK(r.status == 200);
    CHECK(out.sends == 1);
    CHECK(out.status == 200);
    CHECK(out.body == "hello");
    CHECK(out.content_type == "text/plain");
    CHECK(out.header("x-lanes-replica") == a.target->id());
    CHECK(out.header("x-lanes-route-reason") == "prefix_match");
    CHECK(out.header("x-request-id") == "req-1");
    CHECK(a.target->traffic.requests_total.load() == 1);
    CHECK(a.kept); // given back to the pool for the next request
}

TEST_CASE("upstream call: a stream is relayed chunk by chunk and ended", "[upstream]") {
    test_server ts({});
    attempt a(ts.port);
    fake_writer out;
    const auto r = a.run(out, "/stream");
    CHECK(r.answered);
    CHECK(out.streamed);
    CHECK(out.ended);
    CHECK(out.content_type == "text/event-stream");
    CHECK(out.header("x-lanes-replica") == a.target->id());
    // Relayed as the replica framed them (whole chunks, byte for byte).
    CHECK(out.body == "9\r\ndata: 0\n\n\r\n9\r\ndata: 1\n\n\r\n9\r\ndata: 2\n\n\r\n");
    CHECK(a.kept);
}

TEST_CASE("upstream call: a stream cut by the replica ends with an error event", "[upstream]") {
    canned_server cs("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     "Transfer-Encoding: chunked\r\n\r\n9\r\ndata: 0\n\n\r\n");
    attempt a(cs.port());
    fake_writer out;
    const auto r = a.run(out);
    CHECK_FALSE(r.answered);
    CHECK(r.sent_any); // too late to retry
    CHECK(r.failure.starts_with("stream: "));
    CHECK(out.ended);
    REQUIRE(out.writes.size() == 2);
    CHECK(out.writes[0] == "9\r\ndata: 0\n\n\r\n");
    CHECK(out.writes[1].starts_with("data: {\"error\":"));
    CHECK(out.writes[1].find("the replica's stream broke") != std::string::npos);
    CHECK(out.writes[1].ends_with("data: [DONE]\n\n"));
    CHECK_FALSE(a.kept);
}

TEST_CASE("upstream call: no answer, a refused connect and a 5xx are retryable failures",
          "[upstream]") {
    SECTION("closed before any byte of an answer") {
        canned_server cs("");
        attempt a(cs.port(), router::health_config{1, 1, std::chrono::seconds(5)});
        fake_writer out;
        const auto r = a.run(out);
        CHECK_FALSE(r.sent_any);
        CHECK_FALSE(r.answered);
        CHECK(r.failure.starts_with("upstream: "));
        CHECK(out.sends == 0);
        CHECK_FALSE(a.target->healthy()); // threshold 1: the failure ejected it
    }
    SECTION("nothing listens") {
        unsigned short port = 0;
        {
            asio::io_context io;
            asio::ip::tcp::acceptor probe(io, {asio::ip::make_address("127.0.0.1"), 0});
            port = probe.local_endpoint().port();
        }
        attempt a(port);
        fake_writer out;
        const auto r = a.run(out);
        CHECK_FALSE(r.sent_any);
        CHECK(r.failure.starts_with("connect: "));
    }
    SECTION("a 503 is kept to relay if no other replica answers") {
        canned_server cs("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                         "Content-Length: 7\r\n\r\n{\"e\":1}");
        attempt a(cs.port());
        fake_writer out;
        const auto r = a.run(out);
        CHECK_FALSE(r.sent_any);
        CHECK(r.status == 503);
        CHECK(r.failed_body == "{\"e\":1}");
        CHECK(r.failed_content_type == "application/json");
        CHECK(out.sends == 0);
    }
}

TEST_CASE("upstream call: a client that leaves closes the upstream request", "[upstream]") {
    test_server ts({}); // /watch answers nothing and counts the clients that left it
    attempt a(ts.port);
    fake_writer out;
    router::attempt_result r;
    run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        http::request req;
        req.start(bhttp::verb::get, "GET", "/watch", 11);
        asio::steady_timer later(ex, 100ms);
        later.async_wait([&out](boost::system::error_code) { out.leave(); });
        router::upstream_call call(a.cfg, a.metrics, a.target, a.choice, "req-2",
                                   std::chrono::steady_clock::now());
        r = co_await call.run(req, out);
    });
    CHECK(r.client_gone);
    CHECK_FALSE(r.sent_any);
    CHECK(out.sends == 0);
    // The replica saw its client (the router) close, as it would abort the request.
    const auto deadline = std::chrono::steady_clock::now() + 2s;
    while (ts.client_left.load() == 0 && std::chrono::steady_clock::now() < deadline)
        std::this_thread::sleep_for(5ms);
    CHECK(ts.client_left.load() == 1);
    CHECK(a.target->healthy()); // a client that left is not the replica's fault
}

TEST_CASE("upstream_head forwards end-to-end fields and sets its own", "[upstream]") {
    http::request req;
    req.start(bhttp::verb::post, "POST", "/v1/completions?x=1", 11);
    req.add("Host", "router:8000");
    req.add("Connection", "keep-alive");
    req.add("Transfer-Encoding", "chunked");
    req.add("Authorization", "Bearer k");
    req.add("X-Request-Id", "client-id");
    req.add("Accept", "a");
    req.add("Accept", "b");
    req.body() = "{}";
    const std::string head =
        router::upstream_head(req, "/base", "127.0.0.1:9000", "req-9", /*with_body=*/true);
    CHECK(head == "POST /base/v1/completions?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9000\r\n"
                  "Authorization: Bearer k\r\nAccept: a\r\nAccept: b\r\n"
                  "x-request-id: req-9\r\nContent-Length: 2\r\n\r\n{}");
}

TEST_CASE("upstream call: the engine's end-to-end headers are relayed, hop-by-hop ones not",
          "[upstream]") {
    canned_server cs("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nServer: vllm\r\n"
                     "x-ratelimit-remaining-requests: 9\r\nConnection: x-hop\r\nx-hop: 1\r\n"
                     "Connection: keep-alive, X-Two\r\nx-two: 2\r\nx-kept: 3\r\n"
                     "x-request-id: engine-id\r\nContent-Length: 2\r\n\r\n{}");
    attempt a(cs.port());
    fake_writer out;
    const auto r = a.run(out);
    CHECK(r.answered);
    CHECK(out.header("x-ratelimit-remaining-requests") == "9");
    CHECK(out.header("x-hop").empty());
    CHECK(out.header("x-two").empty()); // named by the second Connection field
    CHECK(out.header("x-kept") == "3");
    CHECK(out.header("Server").empty());          // the router's writer names itself
    CHECK(out.header("x-request-id") == "req-1"); // the router's id, once
    int ids = 0;
    for (const auto& [name, value] : out.headers)
        ids += name == "x-request-id" ? 1 : 0;
    CHECK(ids == 1);
}

TEST_CASE("upstream call: 429 and 503 are backpressure, kept with their headers to relay",
          "[upstream]") {
    for (const int status : {429, 503}) {
        INFO(status);
        canned_server cs("HTTP/1.1 " + std::to_string(status) +
                         " Busy\r\nRetry-After: 7\r\nx-why: full\r\nContent-Type: "
                         "application/json\r\nContent-Length: 2\r\n\r\n{}");
        attempt a(cs.port(), router::health_config{1, 1, std::chrono::seconds(5)});
        fake_writer out;
        const auto r = a.run(out);
        CHECK(r.backpressure);
        CHECK_FALSE(r.sent_any);
        CHECK(r.retry_after == std::chrono::seconds(7));
        CHECK(r.failed_body == "{}");
        CHECK(std::find(r.failed_headers.begin(), r.failed_headers.end(),
                        std::pair<std::string, std::string>{"x-why", "full"}) !=
              r.failed_headers.end());
        CHECK(a.target->healthy()); // threshold 1, and still in: load is not failure
    }
    canned_server five_hundred("HTTP/1.1 500 Oops\r\nContent-Length: 0\r\n\r\n");
    attempt b(five_hundred.port(), router::health_config{1, 1, std::chrono::seconds(5)});
    fake_writer out;
    CHECK_FALSE(b.run(out).backpressure);
    CHECK_FALSE(b.target->healthy()); // a 500 is a failure
}

TEST_CASE("Retry-After in seconds or as a date, and response ids from bodies and streams",
          "[upstream]") {
    const auto now = std::chrono::system_clock::from_time_t(784111777); // Sun, 06 Nov 1994 08:49:37
    CHECK(router::parse_retry_after("120", now) == std::chrono::seconds(120));
    CHECK(router::parse_retry_after(" 3 ", now) == std::chrono::seconds(3));
    CHECK(router::parse_retry_after("Sun, 06 Nov 1994 08:50:37 GMT", now) ==
          std::chrono::seconds(60));
    CHECK(router::parse_retry_after("Sun, 06 Nov 1994 08:00:00 GMT", now) ==
          std::chrono::seconds(0)); // in the past: at once
    CHECK_FALSE(router::parse_retry_after("", now));
    CHECK_FALSE(router::parse_retry_after("-5", now));
    // Past a day (or past 64 bits, or a date in the year 9999) it reads as a day: the
    // milliseconds the router computes from it stay far from overflow.
    CHECK(router::parse_retry_after("10000000000000000", now) == std::chrono::seconds(86'400));
    CHECK(router::parse_retry_after("99999999999999999999999", now) ==
          std::chrono::seconds(86'400));
    CHECK(router::parse_retry_after("Fri, 31 Dec 9999 23:59:59 GMT", now) ==
          std::chrono::seconds(86'400));
    CHECK_FALSE(router::parse_retry_after("soon", now));
    CHECK(router::find_response_id(R"({"id": "resp_abc","object":"response"})") == "resp_abc");
    CHECK(router::find_response_id(
              "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{"
              "\"id\":\"resp_9\",\"status\":\"in_progress\"}}\n\n") == "resp_9");
    CHECK(router::find_response_id(R"({"id":"cmpl-1"})").empty());
}

TEST_CASE("upstream_head sends the replica's credentials in place of the client's", "[upstream]") {
    http::request req;
    req.start(bhttp::verb::post, "POST", "/v1/completions", 11);
    req.add("Authorization", "Bearer client");
    req.add("Accept", "a");
    const std::string replaced =
        router::upstream_head(req, "", "h:1", "r", false, "Bearer replica");
    CHECK(replaced.find("Authorization: Bearer replica\r\n") != std::string::npos);
    CHECK(replaced.find("Bearer client") == std::string::npos);
    const std::string kept = router::upstream_head(req, "", "h:1", "r");
    CHECK(kept.find("Authorization: Bearer client\r\n") != std::string::npos);
}
