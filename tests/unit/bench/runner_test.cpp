// lanes-bench's load loop against an in-process server that answers /v1/completions with a canned
// event stream (or a refusal, a JSON body, a stream error) chosen by the prompt: what the runner
// sends, and what it records per request.
#include "bench/runner.hpp"

#include "common/http/server.hpp"
#include "common/http/sse.hpp"

#include <boost/asio.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <array>
#include <mutex>
#include <thread>

using namespace lanes;
using namespace lanes::bench;
using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace http = lanes::common::http;
using status = boost::beast::http::status;
using nlohmann::json;

namespace {

// The server: "fail..." is refused 503, "plain..." answered with JSON, "error..." streams a text
// event and an error event, "nousage..." streams text without a usage chunk; anything else streams
// max_tokens events of "x" (the first after 30 ms), then usage and [DONE].
struct canned_llm {
    asio::io_context io;
    std::mutex mutex;
    std::vector<json> bodies;          // each request's body, as it came
    std::vector<std::string> sessions; // each request's x-session-id ("" when none)
    http::server srv{
        io,
        {},
        [this](http::request& req, http::response_writer& out) { return serve(req, out); },
        "canned"};
    unsigned short port = srv.listen("127.0.0.1", 0);
    std::thread thread{[this] { io.run(); }};

    ~canned_llm() {
        srv.stop();
        io.stop();
        thread.join();
    }

    asio::awaitable<void> serve(http::request& req, http::response_writer& out) {
        const json body = json::parse(req.body());
        {
            std::lock_guard lock(mutex);
            bodies.push_back(body);
            sessions.emplace_back(req["x-session-id"]);
        }
        const std::string prompt = body["prompt"];
        const int n = body["max_tokens"];
        if (prompt.starts_with("fail")) {
            co_await out.send(http::make_response(req, status::service_unavailable, "{}"));
            co_return;
        }
        if (prompt.starts_with("plain")) {
            co_await out.send(http::make_response(req, status::ok, R"({"choices":[]})"));
            co_return;
        }
        const std::array<http::header_view, 1> h{{{"x-lanes-replica", "http://127.0.0.1:1"}}};
        co_await out.begin_stream(status::ok, "text/event-stream", h);
        asio::steady_timer first(co_await asio::this_coro::executor, 30ms);
        co_await first.async_wait(asio::use_awaitable);
        const json text = {{"choices", {{{"index", 0}, {"text", "x"}}}}, {"usage", nullptr}};
        if (prompt.starts_with("error")) {
            co_await out.write_chunk(http::sse_event(text.dump()));
            co_await out.write_chunk(http::sse_event(R"({"error":{"message":"boom"}})"));
        } else {
            for (int i = 0; i < n; ++i)
                co_await out.write_chunk(http::sse_event(text.dump()));
            if (!prompt.starts_with("nousage")) {
                const json usage = {
                    {"choices", json::array()},
                    {"usage", {{"prompt_tokens", prompt.size() + 1}, {"completion_tokens", n}}}};
                co_await out.write_chunk(http::sse_event(usage.dump()));
            }
        }
        co_await out.write_chunk(http::sse_done);
        co_await out.end_stream();
    }
};

request_spec spec(std::string prompt, std::int64_t max_tokens,
                  std::optional<std::string> session = {}, double arrival = -1.0) {
    return {std::move(prompt), max_tokens, std::move(session), arrival};
}

bench_config config() {
    bench_config cfg;
    cfg.concurrency = 2;
    cfg.request_timeout = http::duration{10'000}; // a hang fails the test, not ctest's timeout
    return cfg;
}

} // namespace

TEST_CASE("runner: a closed loop records status, TTFT, gaps and tokens per request", "[runner]") {
    canned_llm server;
    const std::vector<stream> workload = {
        {spec("hello", 5)},    {spec("turn one", 3, "s1"), spec("turn two", 2, "s1")},
        {spec("fail now", 4)}, {spec("plain json", 4)},
        {spec("nousage", 3)},  {spec("error soon", 3)},
    };
    double wall = 0;
    const auto records = run(config(), {"127.0.0.1", server.port, ""}, workload, wall);
    REQUIRE(records.size() == 7); // streams flattened in order
    const auto& hello = records[0];
    CHECK(hello.status == 200);
    CHECK(hello.error.empty());
    CHECK(hello.replica == "http://127.0.0.1:1");
    CHECK(hello.output_chunks == 5);
    CHECK(hello.itl.size() == 4);
    CHECK(hello.completion_tokens == 5); // from the usage chunk
    CHECK(hello.prompt_tokens == 6);
    CHECK(hello.ttft >= 0.03); // the first text came 30 ms after the headers
    CHECK(hello.e2e >= hello.ttft);
    CHECK(hello.scheduled_s == -1); // closed loop: no schedule
    // The second turn starts once the first has ended.
    CHECK(records[1].error.empty());
    CHECK(records[2].error.empty());
    CHECK(records[2].completion_tokens == 2);
    CHECK(records[2].start_s >= records[1].start_s + records[1].e2e - 1e-6);
    CHECK(records[3].status == 503);
    CHECK(records[3].error == "status 503");
    CHECK(records[4].status == 200);
    CHECK(records[4].error == "protocol: not an event stream");
    CHECK(records[5].error.empty());
    CHECK(records[5].completion_tokens == 3); // no usage: counted from the events
    CHECK(records[5].prompt_tokens == 0);
    CHECK(records[6].error == "stream: boom");
    CHECK(records[6].output_chunks == 1);
    double last_end = 0;
    for (const auto& r : records)
        last_end = std::max(last_end, r.start_s + r.e2e);
    CHECK(wall >= last_end - 1e-6);
    CHECK(wall < last_end + 1.0);
}

TEST_CASE("runner: what it asks for: a stream with usage, ignore_eos, the session key",
          "[runner]") {
    canned_llm server;
    const std::vector<stream> workload = {{spec("one", 2, "s")}, {spec("two", 1)}};
    double wall = 0;
    auto cfg = config();
    cfg.concurrency = 1; // one worker: the requests arrive in workload order
    run(cfg, {"127.0.0.1", server.port, ""}, workload, wall);
    {
        std::lock_guard lock(server.mutex);
        REQUIRE(server.bodies.size() == 2);
        CHECK(server.bodies[0] == json{{"prompt", "one"},
                                       {"max_tokens", 2},
                                       {"stream", true},
                                       {"ignore_eos", true},
                                       {"stream_options", {{"include_usage", true}}}});
        CHECK_FALSE(server.bodies[1].contains("model")); // no --model: the server chooses
        CHECK(server.sessions == std::vector<std::string>{"s", ""});
    } // (the server's handler takes the lock: not held while it serves)
    cfg.model = "lanes-tiny";
    const auto again = run(cfg, {"127.0.0.1", server.port, ""}, {{spec("three", 1)}}, wall);
    REQUIRE(again.size() == 1);
    CHECK(again[0].error.empty());
    std::lock_guard lock(server.mutex);
    REQUIRE(server.bodies.size() == 3);
    CHECK(server.bodies[2]["model"] == "lanes-tiny");
}

TEST_CASE("runner: trace times schedule each stream's first request", "[runner]") {
    canned_llm server;
    const std::vector<stream> workload = {{spec("a", 1, std::nullopt, 0.0)},
                                          {spec("b", 1, "s", 0.05), spec("c", 1, "s", 0.05)}};
    auto cfg = config();
    cfg.trace_times = true;
    double wall = 0;
    const auto records = run(cfg, {"127.0.0.1", server.port, ""}, workload, wall);
    REQUIRE(records.size() == 3);
    for (const auto& r : records)
        CHECK(r.error.empty());
    CHECK(records[0].scheduled_s == 0.0);
    CHECK(records[1].scheduled_s == 0.05);
    CHECK(records[1].start_s >= 0.05);   // not sent before it was due
    CHECK(records[2].scheduled_s == -1); // a later turn follows its stream, not the clock
    CHECK(records[2].start_s >= records[1].start_s + records[1].e2e - 1e-6);
}

TEST_CASE("runner: a server nobody answers for is a connect error per request", "[runner]") {
    asio::io_context io;
    asio::ip::tcp::acceptor probe(io, {asio::ip::make_address("127.0.0.1"), 0});
    const unsigned short port = probe.local_endpoint().port();
    probe.close(); // nothing listens there now
    double wall = 0;
    const auto records =
        run(config(), {"127.0.0.1", port, ""}, {{spec("x", 1)}, {spec("y", 1)}}, wall);
    REQUIRE(records.size() == 2);
    for (const auto& r : records) {
        CHECK(r.status == 0);
        CHECK(r.error.starts_with("connect: "));
        CHECK(r.output_chunks == 0);
        CHECK(r.e2e >= 0.0);
    }
}
