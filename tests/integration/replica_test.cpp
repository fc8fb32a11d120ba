// lanes-replica on its own: prefix accounting seen through /metrics, validation, a full queue,
// and a client that disconnects mid-stream.
#include "harness.hpp"

#include "common/prom_parser.hpp"

#include <boost/asio.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <future>
#include <thread>

using namespace lanes;
using namespace std::chrono_literals;

namespace {

double metric(unsigned short port, const std::string& name,
              const std::vector<std::pair<std::string, std::string>>& labels = {}) {
    const auto r = test::get(port, "/metrics");
    const auto parsed = common::prom::parse(r.body);
    const auto* s = parsed.find(name, labels);
    return s ? s->value : -1.0;
}

// Polls until `pred` holds or 10 s pass.
template <class Pred>
bool eventually(Pred pred) {
    const auto deadline = std::chrono::steady_clock::now() + 10s;
    while (std::chrono::steady_clock::now() < deadline) {
        if (pred())
            return true;
        std::this_thread::sleep_for(10ms);
    }
    return false;
}

} // namespace

TEST_CASE("the same 1000-byte prompt twice: the second hits every full block", "[replica]") {
    test::process replica(LANES_REPLICA_BIN, {"--port", "0", "--backend", "cpu"});
    REQUIRE(test::wait_healthy(replica.port(), 10s));
    const nlohmann::json body = {{"prompt", std::string(1000, 'q')}, {"max_tokens", 2}};
    REQUIRE(test::post_json(replica.port(), "/v1/completions", body.dump()).status == 200);
    CHECK(metric(replica.port(), "vllm:prefix_cache_hits_total") == 0.0);
    const auto second = test::post_json(replica.port(), "/v1/completions", body.dump());
    REQUIRE(second.status == 200);
    // 1001 prompt tokens (BOS + 1000 bytes): 62 full blocks of 16 = 992 tokens; the last token
    // is always computed.
    CHECK(metric(replica.port(), "vllm:prefix_cache_hits_total") == 992.0);
    CHECK(metric(replica.port(), "vllm:prefix_cache_queries_total") == 2002.0);
    CHECK(nlohmann::json::parse(second.body)["usage"]["prompt_tokens_details"]["cached_tokens"] ==
          992);
    const auto load = nlohmann::json::parse(test::get(replica.port(), "/load").body);
    CHECK(load["prefix_cache_hits"] == 992);
    CHECK(load["block_size"] == 16);
}

TEST_CASE("replica validation answers OpenAI errors", "[replica]") {
    test::process replica(LANES_REPLICA_BIN,
                          {"--port", "0", "--backend", "cpu", "--max-model-len", "256"});
    REQUIRE(test::wait_healthy(replica.port(), 10s));
    const auto port = replica.port();
    auto status_of = [&](const std::string& path, const std::string& body) {
        const auto r = test::post_json(port, path, body);
        const auto j = nlohmann::json::parse(r.body, nullptr, false);
        CHECK((!j.is_discarded() && j.contains("error")) == (r.status != 200));
        return r.status;
    };
    CHECK(status_of("/v1/completions", R"({"prompt":"x","max_tokens":300})") == 400);
    CHECK(status_of("/v1/completions", R"({"prompt":"x","max_tokens":-1})") == 400);
    CHECK(status_of("/v1/completions", R"({"prompt":"x","n":2})") == 400);
    CHECK(status_of("/v1/completions", R"({"prompt":"x","model":"gpt-9"})") == 404);
    CHECK(status_of("/v1/chat/completions", R"({"messages":[]})") == 400);
    CHECK(status_of("/v1/completions", R"({"prompt":"x","max_tokens":3})") == 200);
}

TEST_CASE("a full waiting queue answers 503 and the replica recovers", "[replica]") {
    // sim backend slowed 10x: each request takes over a second.
    test::process replica(LANES_REPLICA_BIN, {"--port", "0", "--backend", "sim", "--sim-speedup",
                                              "0.1", "--max-num-seqs", "1", "--max-waiting", "1"});
    REQUIRE(test::wait_healthy(replica.port(), 10s));
    const std::string body = R"({"prompt":"slow","max_tokens":20,"ignore_eos":true})";
    auto first = std::async(std::launch::async, [&] {
        return test::post_json(replica.port(), "/v1/completions", body);
    });
    REQUIRE(eventually([&] { return metric(replica.port(), "vllm:num_requests_running") == 1.0; }));
    auto second = std::async(std::launch::async, [&] {
        return test::post_json(replica.port(), "/v1/completions", body);
    });
    REQUIRE(eventually([&] {
        return nlohmann::json::parse(test::get(replica.port(), "/load").body)["waiting"] == 1;
    }));
    const auto third = test::post_json(replica.port(), "/v1/completions", body);
    CHECK(third.status == 503);
    CHECK(first.get().status == 200);
    CHECK(second.get().status == 200);
    CHECK(test::post_json(replica.port(), "/v1/completions", body).status == 200);
}

TEST_CASE("a client that disconnects mid-stream aborts its request and frees its blocks",
          "[replica]") {
    test::process replica(LANES_REPLICA_BIN,
                          {"--port", "0", "--backend", "sim", "--sim-speedup", "0.2"});
    REQUIRE(test::wait_healthy(replica.port(), 10s));
    {
        boost::asio::io_context io;
        boost::asio::ip::tcp::socket s(io);
        s.connect({boost::asio::ip::make_address("127.0.0.1"), replica.port()});
        const std::string body =
            R"({"prompt":"long story","max_tokens":2000,"ignore_eos":true,"stream":true})";
        const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                                "application/json\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body;
        boost::asio::write(s, boost::asio::buffer(req));
        char buf[512];
        REQUIRE(s.read_some(boost::asio::buffer(buf)) > 0); // the stream has started
        REQUIRE(
            eventually([&] { return metric(replica.port(), "vllm:num_requests_running") == 1.0; }));
    } // socket closed here
    CHECK(eventually([&] {
        return metric(replica.port(), "vllm:request_success_total",
                      {{"finished_reason", "abort"}}) == 1.0;
    }));
    // The gauges are published right after the step that dropped the request.
    CHECK(eventually([&] {
        return metric(replica.port(), "vllm:kv_cache_usage_perc") == 0.0 &&
               metric(replica.port(), "vllm:num_requests_running") == 0.0;
    }));
}
