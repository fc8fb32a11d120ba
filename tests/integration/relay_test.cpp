// Relaying through kept connections: a client that leaves, a pool the replica closed, a stream
// whose first event comes late.
#include "traffic.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <csignal>

using namespace lanes;
using namespace lanes::test;
using namespace std::chrono_literals;
using verb = boost::beast::http::verb;

TEST_CASE("a client that leaves before its answer: the replica aborts, no retry, code 499",
          "[router][failover]") {
    const bool stream = GENERATE(false, true);
    INFO((stream ? "streamed" : "whole answer"));
    test::fleet f(2, {"--backend", "sim", "--sim-speedup", "0.2"}, {"--policy", "round_robin"});
    const auto port = f.router->port();
    auto sum_over_replicas = [&](const std::string& name) {
        double total = 0;
        for (const auto& r : f.replicas)
            total +=
                common::prom::parse(test::get(r->port(), "/metrics").body).sum(name).value_or(0);
        return total;
    };
    {
        boost::asio::io_context io;
        boost::asio::ip::tcp::socket s(io);
        s.connect({boost::asio::ip::make_address("127.0.0.1"), port});
        const std::string body = std::string(R"({"prompt":"long story","max_tokens":2000,)") +
                                 (stream ? R"("stream":true,)" : "") + R"("ignore_eos":true})";
        const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                                "application/json\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body;
        boost::asio::write(s, boost::asio::buffer(req));
        REQUIRE(
            eventually([&] { return sum_over_replicas("vllm:num_requests_running") == 1.0; }, 10s));
    } // the client leaves without waiting for the rest of the answer
    const auto router_metrics = [&] {
        return common::prom::parse(test::get(port, "/metrics").body);
    };
    CHECK(eventually(
        [&] {
            const auto p = router_metrics();
            const auto* s = p.find("lanes_router_requests_total", {{"code", "499"}});
            return s && s->value == 1.0;
        },
        10s));
    // The replica that had it aborted it, and no other replica was asked (no retry).
    CHECK(eventually(
        [&] {
            return sum_over_replicas("vllm:num_requests_running") == 0.0 &&
                   sum_over_replicas("vllm:request_success_total") == 1.0;
        },
        10s));
    CHECK(router_metrics().sum("lanes_router_retries_total").value_or(0) == 0.0);
    // A client that left is no broken stream.
    const auto m = router_metrics();
    const auto* broken = m.find("lanes_router_errors_total", {{"kind", "stream_broken"}});
    CHECK((!broken || broken->value == 0.0));
}

TEST_CASE("a pool of connections the replica closed while idle: each request still answered",
          "[router][failover]") {
    // A backend that answers every request as if keeping the connection, then closes it: each
    // connection the router pools is closed by the time it is used again (as a replica's
    // keep-alive timeout does after a lull), so a request may meet several in a row.
    raw_backend backend([](raw_backend::socket_ptr s, const std::atomic<bool>&) {
        namespace asio = boost::asio;
        char buf[8192];
        boost::system::error_code rec;
        const std::size_t n = s->read_some(asio::buffer(buf), rec); // one small request
        if (rec)
            return;
        const std::string body = std::string_view(buf, n).starts_with("POST ")
                                     ? R"({"id":"cmpl-1","object":"text_completion",)"
                                       R"("choices":[{"index":0,"text":"ok"}]})"
                                     : "";
        const std::string answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                   "Content-Length: " +
                                   std::to_string(body.size()) + "\r\n\r\n" + body;
        asio::write(*s, asio::buffer(answer), rec);
        s->shutdown(asio::ip::tcp::socket::shutdown_both, rec);
        s->close(rec);
    });
    test::process router(LANES_ROUTER_BIN, {"--host", "127.0.0.1", "--port", "0", "--replica",
                                            backend.url(), "--max-retries", "0"});
    REQUIRE(test::wait_healthy(router.port(), 10s));
    const std::string prompt = R"({"prompt":"hello","max_tokens":2})";
    // Four at once leave four pooled connections, all closed by the backend.
    std::array<int, 4> first{};
    std::vector<std::thread> clients;
    for (auto& status : first)
        clients.emplace_back([&status, &router, &prompt] {
            status = test::post_json(router.port(), "/v1/completions", prompt).status;
        });
    for (auto& t : clients)
        t.join();
    std::this_thread::sleep_for(200ms);
    std::vector<int> after;
    for (int i = 0; i < 8; ++i)
        after.push_back(test::post_json(router.port(), "/v1/completions", prompt).status);
    for (const int status : first)
        CHECK(status == 200);
    for (const int status : after)
        CHECK(status == 200);
}

TEST_CASE("a stream whose first event comes after --stream-idle-timeout is relayed whole",
          "[router][failover]") {
    // A replica sends a stream's header when it takes the request, then the request may queue
    // before its first token: the first event is bounded by --first-byte-timeout (2 s here),
    // the pauses between events by --stream-idle-timeout (200 ms here).
    raw_backend backend([](raw_backend::socket_ptr s, const std::atomic<bool>& stopping) {
        namespace asio = boost::asio;
        char buf[8192];
        boost::system::error_code rec;
        while (!stopping.load()) {
            const std::size_t n = s->read_some(asio::buffer(buf), rec);
            if (rec)
                return;
            if (!std::string_view(buf, n).starts_with("POST ")) { // health, metrics
                asio::write(
                    *s,
                    asio::buffer(std::string_view("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")),
                    rec);
                continue;
            }
            asio::write(*s,
                        asio::buffer(std::string_view(
                            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                            "Transfer-Encoding: chunked\r\n\r\n")),
                        rec);
            std::this_thread::sleep_for(600ms); // queued
            const std::string event = "data: {\"choices\":[{\"text\":\"late\"}]}\n\n";
            const std::string done = "data: [DONE]\n\n";
            std::ostringstream chunks;
            chunks << std::hex << event.size() << "\r\n"
                   << event << "\r\n"
                   << done.size() << "\r\n"
                   << done << "\r\n0\r\n\r\n";
            asio::write(*s, asio::buffer(chunks.str()), rec);
        }
    });
    test::process router(LANES_ROUTER_BIN,
                         {"--host", "127.0.0.1", "--port", "0", "--replica", backend.url(),
                          "--first-byte-timeout", "2s", "--stream-idle-timeout", "200ms",
                          "--max-retries", "0"});
    REQUIRE(test::wait_healthy(router.port(), 10s));
    const auto r = test::post_json(router.port(), "/v1/completions",
                                   R"({"prompt":"queued","max_tokens":2,"stream":true})");
    CHECK(r.status == 200);
    CHECK(r.body.find("late") != std::string::npos);
    CHECK(r.body.find("error") == std::string::npos);
    CHECK(r.body.find("[DONE]") != std::string::npos);
}

TEST_CASE("bytes a replica writes after its answer never reach the next request", "[router]") {
    // A replica that writes after its answer: each answer is followed, 100 ms later and on the same
    // connection, by a second answer nobody asked for. A pooled connection holding them is not
    // reused.
    raw_backend backend([](raw_backend::socket_ptr s, const std::atomic<bool>& stopping) {
        namespace asio = boost::asio;
        char buf[8192];
        boost::system::error_code rec;
        while (!stopping.load()) {
            const std::size_t n = s->read_some(asio::buffer(buf), rec);
            if (rec)
                return;
            const bool post = std::string_view(buf, n).starts_with("POST ");
            const std::string body = post ? R"({"id":"cmpl-1","object":"text_completion",)"
                                            R"("choices":[{"index":0,"text":"ok"}]})"
                                          : "";
            asio::write(*s,
                        asio::buffer("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                     "Content-Length: " +
                                     std::to_string(body.size()) + "\r\n\r\n" + body),
                        rec);
            if (post) {
                std::this_thread::sleep_for(100ms);
                asio::write(*s,
                            asio::buffer(std::string_view(
                                "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nEVIL!")),
                            rec);
            }
        }
    });
    test::process router(LANES_ROUTER_BIN,
                         {"--host", "127.0.0.1", "--port", "0", "--replica", backend.url(),
                          "--health-interval", "1h", "--max-retries", "0"});
    REQUIRE(test::wait_healthy(router.port(), 10s));
    for (int i = 0; i < 5; ++i) {
        const auto r =
            test::post_json(router.port(), "/v1/completions", R"({"prompt":"hi","max_tokens":1})");
        INFO("request " << i);
        CHECK(r.status == 200);
        CHECK(r.body.find("EVIL") == std::string::npos);
        CHECK(r.body.find(R"("text":"ok")") != std::string::npos);
        std::this_thread::sleep_for(300ms); // the stray bytes are there before the next request
    }
}
