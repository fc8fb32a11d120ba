// Checkpoints through the real binaries: lanes-make-checkpoint writes a Qwen3-family checkpoint
// with the tiny test tokenizer; lanes-replica --model serves it under the directory's name (or
// --served-model-name), in the model's ids; a router with the same directory as its tokenizer
// routes repeats prefix_match_precise on the replicas' KV events.
#include "traffic.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>

#include <unistd.h>

using namespace lanes;
using namespace lanes::test;
using namespace std::chrono_literals;

namespace {

const std::string tiny_tokenizer = std::string(LANES_SOURCE_DIR) + "/tests/fixtures/tokenizer-tiny";

// A directory holding a random Qwen3-shaped checkpoint and the tiny tokenizer; removed after.
struct checkpoint_dir {
    std::string path =
        (std::filesystem::temp_directory_path() / ("lanes-ckpt-it-" + std::to_string(::getpid())))
            .string();
    checkpoint_dir() {
        std::filesystem::remove_all(path);
        const std::string cmd = std::string(LANES_MAKE_CHECKPOINT_BIN) + " --out " + path +
                                " --shape tiny --family qwen3 --dtype bf16 --tokenizer " +
                                tiny_tokenizer + " > /dev/null";
        REQUIRE(std::system(cmd.c_str()) == 0);
    }
    ~checkpoint_dir() { std::filesystem::remove_all(path); }
};

std::unique_ptr<process> model_replica(const std::string& dir,
                                       std::vector<std::string> extra = {}) {
    std::vector<std::string> args{"--port",
                                  "0",
                                  "--model",
                                  dir,
                                  "--backend",
                                  "cpu",
                                  "--kv-cache-mb",
                                  "16",
                                  "--kv-events-endpoint",
                                  "tcp://127.0.0.1:*",
                                  "--kv-events-replay-endpoint",
                                  "tcp://127.0.0.1:*"};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = std::make_unique<process>(LANES_REPLICA_BIN, args);
    REQUIRE(wait_healthy(r->port(), 20s));
    return r;
}

} // namespace

TEST_CASE("checkpoint: a replica serves a checkpoint under its directory's name", "[checkpoint]") {
    checkpoint_dir dir;
    auto replica = model_replica(dir.path);
    const auto models = nlohmann::json::parse(get(replica->port(), "/v1/models").body);
    CHECK(models["data"][0]["id"] == dir.path);
    CHECK(models["data"][0]["max_model_len"] == 4096); // max_position_embeddings caps 8192
    const auto ok = post_json(replica->port(), "/v1/completions",
                              R"({"model":")" + dir.path +
                                  R"(","prompt":"hello world","max_tokens":4,"temperature":0})");
    REQUIRE(ok.status == 200);
    const auto body = nlohmann::json::parse(ok.body);
    CHECK(body["model"] == dir.path);
    CHECK(body["usage"]["completion_tokens"].get<int>() >= 1);
    const auto wrong = post_json(replica->port(), "/v1/completions",
                                 R"({"model":"other","prompt":"hi","max_tokens":1})");
    CHECK(wrong.status == 404);

    auto named = model_replica(
        dir.path, {"--served-model-name", "tiny-qwen", "--served-model-name", "tiny-qwen-alias"});
    const auto names = nlohmann::json::parse(get(named->port(), "/v1/models").body);
    REQUIRE(names["data"].size() == 2);
    CHECK(names["data"][0]["id"] == "tiny-qwen");
    CHECK(names["data"][1]["id"] == "tiny-qwen-alias");
    const auto alias = post_json(named->port(), "/v1/chat/completions",
                                 R"({"model":"tiny-qwen-alias","messages":[{"role":"user",)"
                                 R"("content":"hi"}],"max_tokens":2})");
    REQUIRE(alias.status == 200);
    CHECK(nlohmann::json::parse(alias.body)["model"] == "tiny-qwen"); // the first name, as vLLM
}

TEST_CASE("checkpoint: a router routes prefix_match_precise in front of two checkpoint replicas",
          "[checkpoint]") {
    checkpoint_dir dir;
    std::vector<std::unique_ptr<process>> replicas;
    replicas.push_back(model_replica(dir.path));
    replicas.push_back(model_replica(dir.path));
    const auto router = tokenizer_router(replicas, dir.path);
    check_chats_repeat_precisely(router->port(), 4);
}
