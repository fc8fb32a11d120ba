// lanes-replica on its own: prefix accounting seen through /metrics, validation, a full queue,
// and a client that disconnects mid-stream.
#include "harness.hpp"

#include "common/metrics/prom_parser.hpp"

#include <boost/asio.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <future>
#include <set>
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
    // vLLM's messages and bounds: a max_tokens too large for the context (however large: it is
    // compared, not added), a prompt that fills the context, what lanes replicas do not do.
    const auto too_large = test::post_json(port, "/v1/completions",
                                           R"({"prompt":"x","max_tokens":9223372036854775807})");
    CHECK(too_large.status == 400);
    CHECK(too_large.body.find("'max_tokens' or 'max_completion_tokens' is too large") !=
          std::string::npos);
    const auto full = test::post_json(port, "/v1/completions",
                                      nlohmann::json{{"prompt", std::string(300, 'p')}}.dump());
    CHECK(full.status == 400);
    CHECK(full.body.find("your request has 301 input tokens") != std::string::npos);
    const auto echo =
        test::post_json(port, "/v1/completions", R"({"prompt":"x","max_tokens":2,"echo":true})");
    CHECK(echo.status == 400);
    CHECK(nlohmann::json::parse(echo.body)["error"]["param"] == "echo");
    const auto top_k = test::post_json(port, "/v1/completions", R"({"prompt":"x","top_k":-5})");
    CHECK(top_k.status == 400);
    CHECK(nlohmann::json::parse(top_k.body)["error"]["param"] == "top_k");
    // A chat without max_tokens gets the rest of the context (here 256 - 240), not a refusal.
    const nlohmann::json chat = {
        {"messages", {{{"role", "user"}, {"content", std::string(200, 'c')}}}},
        {"ignore_eos", true}};
    const auto rest = test::post_json(port, "/v1/chat/completions", chat.dump());
    REQUIRE(rest.status == 200);
    const auto usage = nlohmann::json::parse(rest.body)["usage"];
    CHECK(usage["prompt_tokens"].get<int>() + usage["completion_tokens"].get<int>() == 256);
}

TEST_CASE("a chat stream starts with its role, stream_options alone asks for usage, and "
          "requests without a seed sample apart",
          "[replica]") {
    test::process replica(LANES_REPLICA_BIN, {"--port", "0", "--backend", "cpu"});
    REQUIRE(test::wait_healthy(replica.port(), 10s));
    const std::string body =
        R"({"messages":[{"role":"user","content":"hi"}],"max_tokens":4,"ignore_eos":true,)"
        R"("stream":true,"stream_options":{}})";
    const auto r = test::post_json(replica.port(), "/v1/chat/completions", body);
    REQUIRE(r.status == 200);
    // The first event carries the role; usage comes since stream_options was given.
    const auto first = r.body.find("data: ");
    const auto second = r.body.find("data: ", first + 1);
    REQUIRE(second != std::string::npos);
    CHECK(r.body.substr(first, second - first).find("\"role\":\"assistant\"") != std::string::npos);
    CHECK(r.body.find("\"usage\":{\"prompt_tokens\"") != std::string::npos);
    // Temperature 1 without a seed: five alike requests do not all sample the same text.
    const std::string sampled =
        R"({"prompt":"Once","max_tokens":24,"ignore_eos":true,"temperature":1})";
    std::set<std::string> texts;
    for (int i = 0; i < 5; ++i)
        texts.insert(
            nlohmann::json::parse(test::post_json(replica.port(), "/v1/completions", sampled)
                                      .body)["choices"][0]["text"]
                .get<std::string>());
    CHECK(texts.size() > 1);
    // With a seed, the same text every time.
    const std::string seeded =
        R"({"prompt":"Once","max_tokens":24,"ignore_eos":true,"temperature":1,"seed":7})";
    const auto a =
        nlohmann::json::parse(test::post_json(replica.port(), "/v1/completions", seeded).body);
    const auto b =
        nlohmann::json::parse(test::post_json(replica.port(), "/v1/completions", seeded).body);
    CHECK(a["choices"][0]["text"] == b["choices"][0]["text"]);
    // The same seeded request with a stop string taken from its text: cut there, and
    // stop_reason names it (vLLM's extension).
    const std::string text = a["choices"][0]["text"].get<std::string>();
    REQUIRE(text.size() >= 10);
    const std::string stop = text.substr(6, 3);
    nlohmann::json with_stop = nlohmann::json::parse(seeded);
    with_stop["stop"] = stop;
    const auto c = nlohmann::json::parse(
        test::post_json(replica.port(), "/v1/completions", with_stop.dump()).body);
    CHECK(c["choices"][0]["finish_reason"] == "stop");
    CHECK(c["choices"][0]["stop_reason"] == stop);
    CHECK(c["choices"][0]["text"] == text.substr(0, text.find(stop)));
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
