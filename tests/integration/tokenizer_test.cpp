// A model's tokenizer through the real binaries (the tiny test tokenizer): lanes replicas with
// --tokenizer answer vLLM's /tokenize and /detokenize in the model's ids and generate in them;
// a router with --tokenizer renders and encodes in process, hashes the ids the replicas' KV
// events carry, and routes repeats prefix_match_precise with no /tokenize round trip.
#include "traffic.hpp"

#include <catch2/catch.hpp>

using namespace lanes;
using namespace lanes::test;
using namespace std::chrono_literals;

namespace {

const std::string tiny_dir = std::string(LANES_SOURCE_DIR) + "/tests/fixtures/tokenizer-tiny";

std::unique_ptr<process> tokenizer_replica(int seed) {
    auto r = std::make_unique<process>(
        LANES_REPLICA_BIN,
        std::vector<std::string>{"--port", "0", "--seed", std::to_string(seed), "--tokenizer",
                                 tiny_dir, "--kv-events-endpoint", "tcp://127.0.0.1:*",
                                 "--kv-events-replay-endpoint", "tcp://127.0.0.1:*"});
    REQUIRE(wait_healthy(r->port(), 10s));
    return r;
}

} // namespace

TEST_CASE("tokenizer: a replica answers and generates in the model's ids", "[tokenizer]") {
    auto replica = tokenizer_replica(0);
    const auto port = replica->port();
    const auto models = nlohmann::json::parse(get(port, "/v1/models").body);
    CHECK(models["data"][0]["lanes_tokenizer"].get<std::string>().starts_with("xxh128:"));

    const auto t = post_json(port, "/tokenize",
                             R"({"messages":[{"role":"user","content":"the replica"}],)"
                             R"("return_token_strs":true})");
    REQUIRE(t.status == 200);
    const auto answer = nlohmann::json::parse(t.body);
    CHECK(answer["tokens"][0] == 437); // <|im_start|>, from the model's chat template
    CHECK(answer["count"] == answer["tokens"].size());
    CHECK(answer["token_strs"][0] == "<|im_start|>");
    const auto back =
        post_json(port, "/detokenize", R"({"tokens":)" + answer["tokens"].dump() + "}");
    REQUIRE(back.status == 200);
    CHECK(nlohmann::json::parse(back.body)["prompt"] ==
          "<|im_start|>user\nthe replica<|im_end|>\n<|im_start|>assistant\n");
    CHECK(post_json(port, "/detokenize", R"({"tokens":[439]})").status == 400);
    CHECK(post_json(port, "/detokenize", R"({"tokens":"x"})").status == 400);
    const auto both = post_json(port, "/tokenize",
                                R"({"messages":[{"role":"user","content":"x"}],)"
                                R"("continue_final_message":true})");
    CHECK(both.status == 400);
    const auto raised =
        post_json(port, "/v1/chat/completions", R"({"messages":[{"role":"tool","content":"1"}]})");
    CHECK(raised.status == 400);
    CHECK(raised.body.find("a conversation cannot start with a tool result") != std::string::npos);

    // Generation in the model's vocabulary: usage counts its ids, the text is whole UTF-8.
    const auto c =
        post_json(port, "/v1/completions", R"({"prompt":"the replica","max_tokens":12,"seed":3})");
    REQUIRE(c.status == 200);
    const auto completion = nlohmann::json::parse(c.body);
    CHECK(completion["usage"]["prompt_tokens"] ==
          nlohmann::json::parse(
              post_json(port, "/tokenize", R"({"prompt":"the replica"})").body)["count"]);
    CHECK(completion["usage"]["completion_tokens"].get<int>() <= 12);
    CHECK_NOTHROW(completion["choices"][0]["text"].get<std::string>());
    CHECK(post_json(port, "/v1/completions", R"({"prompt":[1,2,439]})").status == 400);
    // The replica goes on serving.
    CHECK(post_json(port, "/v1/completions", R"({"prompt":"ok","max_tokens":2})").status == 200);
}

TEST_CASE("tokenizer: a router with the model's tokenizer routes on the replicas' events without "
          "tokenize round trips",
          "[tokenizer]") {
    std::vector<std::unique_ptr<process>> replicas;
    replicas.push_back(tokenizer_replica(0));
    replicas.push_back(tokenizer_replica(1));
    const auto router = tokenizer_router(replicas, tiny_dir);
    check_chats_repeat_precisely(router->port(), 6);
    const std::string m = get(router->port(), "/metrics").body;
    CHECK(m.find(R"(lanes_router_tokenize_total{outcome="local"} 12.0)") != std::string::npos);
    CHECK(m.find(R"(outcome="fetched")") == std::string::npos);
    CHECK(m.find("lanes_router_local_tokenize_seconds_count 12") != std::string::npos);
}
