// End to end through real processes: two replicas and a router on port 0.
#include "harness.hpp"
#include "traffic.hpp"

#include "common/http/sse.hpp"
#include "common/metrics/prom_parser.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <csignal>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

using namespace lanes;
using namespace std::chrono_literals;
using verb = boost::beast::http::verb;

namespace {

// Splits an SSE body into its data payloads, checking the framing on the way.
std::vector<std::string> sse_events(const std::string& body) {
    common::http::sse_parser p;
    p.feed(body);
    std::vector<std::string> out;
    while (auto e = p.next())
        out.push_back(*e);
    CHECK(p.pending() == 0);
    return out;
}

} // namespace

TEST_CASE("streaming and non-streaming completions through the router", "[e2e]") {
    test::fleet f(2, {}, {"--policy", "round_robin"});
    const auto port = f.router->port();

    SECTION("streaming chat completion: SSE events then [DONE]") {
        const auto r = test::post_json(
            port, "/v1/chat/completions",
            R"({"messages":[{"role":"user","content":"Say hello"}],"max_tokens":12,"stream":true,
                "ignore_eos":true,"stream_options":{"include_usage":true}})");
        REQUIRE(r.error.empty());
        REQUIRE(r.status == 200);
        CHECK(r.content_type.starts_with("text/event-stream"));
        CHECK(!r.header("x-lanes-replica").empty());
        CHECK(r.header("x-lanes-route-reason") == "round_robin");
        CHECK(!r.header("x-request-id").empty());
        // Every event is framed "data: <json>\n\n".
        CHECK(r.body.starts_with("data: {"));
        CHECK(r.body.ends_with("data: [DONE]\n\n"));
        const auto events = sse_events(r.body);
        REQUIRE(events.size() >= 3);
        CHECK(events.back() == "[DONE]");
        std::string text;
        std::string finish;
        nlohmann::json usage;
        for (std::size_t i = 0; i + 1 < events.size(); ++i) {
            const auto j = nlohmann::json::parse(events[i]);
            CHECK(j["object"] == "chat.completion.chunk");
            if (j.contains("usage") && j["usage"].is_object())
                usage = j["usage"];
            if (j["choices"].empty())
                continue;
            const auto& c = j["choices"][0];
            if (c["delta"].contains("content"))
                text += c["delta"]["content"].get<std::string>();
            if (!c["finish_reason"].is_null())
                finish = c["finish_reason"];
        }
        CHECK(nlohmann::json::parse(events[0])["choices"][0]["delta"]["role"] == "assistant");
        CHECK(finish == "length");
        CHECK(text.size() == 12);
        REQUIRE(usage.is_object());
        CHECK(usage["completion_tokens"] == 12);
        CHECK(usage["total_tokens"] ==
              usage["prompt_tokens"].get<int>() + usage["completion_tokens"].get<int>());
    }

    SECTION("non-streaming completion with usage") {
        const auto r =
            test::post_json(port, "/v1/completions",
                            R"({"prompt":"Once upon a time","max_tokens":7,"ignore_eos":true})");
        REQUIRE(r.status == 200);
        const auto j = nlohmann::json::parse(r.body);
        CHECK(j["object"] == "text_completion");
        CHECK(j["choices"][0]["text"].get<std::string>().size() == 7);
        CHECK(j["choices"][0]["finish_reason"] == "length");
        CHECK(j["usage"]["prompt_tokens"] == 17); // BOS + 16 bytes
        CHECK(j["usage"]["completion_tokens"] == 7);
    }

    SECTION("round-robin alternates between the replicas") {
        std::map<std::string, int> served;
        for (int i = 0; i < 8; ++i) {
            const auto r =
                test::post_json(port, "/v1/completions", R"({"prompt":"x","max_tokens":1})");
            REQUIRE(r.status == 200);
            ++served[r.header("x-lanes-replica")];
        }
        REQUIRE(served.size() == 2);
        for (const auto& [replica, n] : served)
            CHECK(n == 4);
    }

    SECTION("models are the union of the replicas' models") {
        const auto r = test::get(port, "/v1/models");
        REQUIRE(r.status == 200);
        const auto j = nlohmann::json::parse(r.body);
        REQUIRE(j["data"].size() == 1);
        CHECK(j["data"][0]["id"] == "lanes-tiny");
    }
}

TEST_CASE("both servers' /metrics pass promtool", "[e2e][metrics]") {
    test::fleet f(2, {}, {});
    REQUIRE(test::post_json(f.router->port(), "/v1/completions", R"({"prompt":"hi"})").status ==
            200);
    std::string output;
    const auto router_metrics = test::get(f.router->port(), "/metrics");
    REQUIRE(router_metrics.status == 200);
    CHECK(router_metrics.body.find("lanes_router_requests_total") != std::string::npos);
    const int router_rc = test::promtool_check(router_metrics.body, output);
    if (router_rc == -1)
        FAIL("promtool not on PATH: scripts/install-deps.sh installs the prometheus package");
    INFO(output);
    CHECK(router_rc == 0);
    CHECK(output.empty()); // fully lint-clean

    const auto replica_metrics = test::get(f.replicas[0]->port(), "/metrics");
    REQUIRE(replica_metrics.status == 200);
    CHECK(replica_metrics.body.find("vllm:prefix_cache_hits_total") != std::string::npos);
    const int replica_rc = test::promtool_check(replica_metrics.body, output);
    INFO(output);
    // vLLM's names contain ':', which only trips promtool's colon lint (exit 3); anything else
    // (a parse error exits 1, other lint problems print other messages) fails.
    CHECK((replica_rc == 0 || replica_rc == 3));
    std::istringstream lines(output);
    for (std::string line; std::getline(lines, line);)
        if (!line.empty())
            CHECK(line.find("should not contain ':'") != std::string::npos);
}

// The router relays a chunked stream chunk by chunk as received. When the replica dies in the
// middle, what already reached the client stays well-formed and the stream ends with an SSE
// error event, [DONE] and the last chunk: no hang, no broken framing.
TEST_CASE("a stream whose replica dies ends with an error event and [DONE]", "[e2e][failover]") {
    test::fleet f(1, {"--backend", "sim", "--sim-speedup", "0.25"}, {"--policy", "round_robin"});
    std::thread killer([&] {
        std::this_thread::sleep_for(600ms); // a few tokens in (a decode step is ~25 ms here)
        f.replicas[0]->signal(SIGKILL);
    });
    const auto r = test::post_json(f.router->port(), "/v1/completions",
                                   R"({"prompt":"a slow one","max_tokens":2000,"stream":true})");
    killer.join();
    REQUIRE(r.error.empty()); // the chunked body was complete and well-formed
    REQUIRE(r.status == 200);
    const auto events = sse_events(r.body);
    REQUIRE(events.size() >= 3);
    CHECK(events.back() == "[DONE]");
    const auto error = nlohmann::json::parse(events[events.size() - 2]);
    CHECK(error["error"]["code"] == 502);
    CHECK(error["error"]["message"].get<std::string>().find("stream broke") != std::string::npos);
    // Tokens streamed before the failure arrived whole.
    CHECK(nlohmann::json::parse(events[0])["object"] == "text_completion");
}

TEST_CASE("bad input gets OpenAI error JSON and the servers keep serving", "[e2e][errors]") {
    test::fleet f(1, {}, {"--body-limit", "4096", "--header-limit", "2048"});
    for (const auto port : {f.router->port(), f.replicas[0]->port()}) {
        auto expect_error = [](const test::reply& r, int status) {
            INFO(r.body);
            CHECK(r.status == status);
            const auto j = nlohmann::json::parse(r.body, nullptr, false);
            REQUIRE(!j.is_discarded());
            CHECK(j["error"]["code"] == status);
            CHECK(j["error"]["message"].is_string());
            CHECK(j["error"].contains("type"));
            CHECK(j["error"].contains("param"));
        };
        expect_error(test::post_json(port, "/v1/completions", "{not json"), 400);
        expect_error(test::post_json(port, "/v1/completions", R"({"prompt":42})"), 400);
        expect_error(test::post_json(port, "/v1/chat/completions", R"({"messages":"hi"})"), 400);
        expect_error(test::post_json(port, "/v1/completions", R"({"prompt":"a","max_tokens":0})"),
                     400);
        expect_error(test::get(port, "/v1/nothing-here"), 404);
        if (port == f.router->port()) {
            expect_error(test::post_json(port, "/v1/completions", std::string(8192, 'x')), 413);
            expect_error(test::request(port, verb::get, "/health", "",
                                       {{"x-filler", std::string(4096, 'y')}}),
                         431);
        }
        const auto ok =
            test::post_json(port, "/v1/completions", R"({"prompt":"still there?","max_tokens":2})");
        CHECK(ok.status == 200);
    }
}

TEST_CASE("SIGTERM stops the router and replica cleanly", "[e2e][shutdown]") {
    test::fleet f(1, {}, {});
    f.router->signal(SIGTERM);
    CHECK(f.router->wait(10s) == 0);
    f.replicas[0]->signal(SIGTERM);
    CHECK(f.replicas[0]->wait(10s) == 0);
}

TEST_CASE("two routers share a port with --reuse-port, one stops and the other serves on",
          "[e2e][shutdown]") {
    test::fleet f(1, {"--backend", "sim", "--sim-speedup", "20"}, {"--reuse-port"});
    test::process second(LANES_ROUTER_BIN,
                         {"--host", "127.0.0.1", "--port", std::to_string(f.router->port()),
                          "--reuse-port", "--replica", f.replicas[0]->url()});
    REQUIRE(second.port() == f.router->port());
    REQUIRE(test::wait_healthy(second.admin_port(), 10s));
    // Each router's own count, on its own admin port (never shared).
    const auto answered = [](const test::process& r) {
        const auto parsed = common::prom::parse(test::get(r.admin_port(), "/metrics").body);
        return parsed.sum("lanes_router_requests_total").value_or(0.0);
    };
    const double first_before = answered(*f.router);
    const double second_before = answered(second);
    const nlohmann::json body = {{"prompt", "hello"}, {"max_tokens", 2}};
    // A connection each, each to one of the two listeners by its address hash.
    for (int i = 0; i < 40; ++i)
        REQUIRE(test::post_json(f.router->port(), "/v1/completions", body.dump()).status == 200);
    // A request is counted just after its last byte is written, so the count can trail the
    // client by a moment: wait for it, then check it.
    double first = 0, second_count = 0;
    test::eventually(
        [&] {
            first = answered(*f.router) - first_before;
            second_count = answered(second) - second_before;
            return first + second_count == 40;
        },
        5s);
    CHECK(first > 0);
    CHECK(second_count > 0);
    CHECK(first + second_count == 40);

    // A restart without refusing anyone: the old router stops, the new one holds the port.
    f.router->signal(SIGTERM);
    REQUIRE(f.router->wait(10s) == 0);
    for (int i = 0; i < 10; ++i)
        CHECK(test::post_json(second.port(), "/v1/completions", body.dump()).status == 200);
    double after = 0;
    test::eventually(
        [&] {
            after = answered(second) - second_before;
            return after == second_count + 10;
        },
        5s);
    CHECK(after == second_count + 10);

    // Without --reuse-port a router cannot take a port another one holds, and says so.
    try {
        test::process third(LANES_ROUTER_BIN,
                            {"--host", "127.0.0.1", "--port", std::to_string(second.port()),
                             "--replica", f.replicas[0]->url()});
        FAIL("a third router listened on a held port");
    } catch (const std::runtime_error& e) {
        CHECK_THAT(e.what(),
                   Catch::Contains("cannot listen on 127.0.0.1:" + std::to_string(second.port())));
        CHECK_THAT(e.what(), Catch::Contains("--reuse-port"));
    }
}
