// vLLM's sampling fields through the real binary: a cpu replica with the tiny test tokenizer
// answers logprobs in vLLM's shapes (completions and chat, whole and streamed), applies
// stop_token_ids and min_tokens, and takes the defaults of its model's generation_config.json.
#include "harness.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace lanes;
using namespace lanes::test;
using namespace std::chrono_literals;
using nlohmann::json;

namespace {

const std::string tiny_dir = std::string(LANES_SOURCE_DIR) + "/tests/fixtures/tokenizer-tiny";

std::unique_ptr<process> cpu_replica(const std::string& tokenizer) {
    auto r = std::make_unique<process>(
        LANES_REPLICA_BIN, std::vector<std::string>{"--port", "0", "--backend", "cpu", "--seed",
                                                    "1", "--tokenizer", tokenizer});
    REQUIRE(wait_healthy(r->port(), 10s));
    return r;
}

json post(unsigned short port, const std::string& path, const json& body, int status = 200) {
    const auto r = post_json(port, path, body.dump());
    INFO(r.body);
    REQUIRE(r.status == status);
    return json::parse(r.body);
}

// The JSON events of an SSE body, [DONE] left out.
std::vector<json> events(unsigned short port, const std::string& path, const json& body) {
    const auto r = post_json(port, path, body.dump());
    REQUIRE(r.status == 200);
    std::vector<json> out;
    std::size_t at = 0;
    while ((at = r.body.find("data: ", at)) != std::string::npos) {
        at += 6;
        const auto end = r.body.find("\n\n", at);
        const std::string data = r.body.substr(at, end - at);
        if (data != "[DONE]")
            out.push_back(json::parse(data));
        at = end;
    }
    return out;
}

const json chat_messages = json::array({{{"role", "user"}, {"content", "the replica"}}});

} // namespace

TEST_CASE("sampling: completions logprobs in vLLM's shape, whole and streamed", "[sampling]") {
    auto replica = cpu_replica(tiny_dir);
    const auto port = replica->port();
    const json ask = {{"prompt", "the replica"},
                      {"max_tokens", 6},
                      {"temperature", 0},
                      {"ignore_eos", true},
                      {"logprobs", 2}};
    const auto whole = post(port, "/v1/completions", ask);
    const auto& lp = whole["choices"][0]["logprobs"];
    REQUIRE(lp["tokens"].size() == 6);
    REQUIRE(lp["token_logprobs"].size() == 6);
    REQUIRE(lp["top_logprobs"].size() == 6);
    REQUIRE(lp["text_offset"].size() == 6);
    CHECK(lp["text_offset"][0] == 0);
    for (std::size_t i = 0; i < 6; ++i) {
        const double chosen = lp["token_logprobs"][i];
        CHECK(chosen <= 0.0);
        // Greedy: the chosen token is the likeliest, so it is among the 2 and the dict holds 2.
        const auto& top = lp["top_logprobs"][i];
        CHECK(top.size() <= 2);
        double best = -1e9;
        for (const auto& [token, v] : top.items())
            best = std::max(best, v.get<double>());
        CHECK(best == Approx(chosen));
        if (i > 0) {
            const auto prev = lp["tokens"][i - 1].get<std::string>();
            CHECK(lp["text_offset"][i] >= lp["text_offset"][i - 1]);
        }
    }
    // Streamed: each chunk carries its tokens' logprobs; together they are the whole answer's.
    json streamed = ask;
    streamed["stream"] = true;
    json tokens = json::array(), offsets = json::array();
    for (const auto& e : events(port, "/v1/completions", streamed)) {
        const auto& l = e["choices"][0]["logprobs"];
        if (l.is_null())
            continue;
        for (std::size_t i = 0; i < l["tokens"].size(); ++i) {
            tokens.push_back(l["tokens"][i]);
            offsets.push_back(l["text_offset"][i]);
        }
    }
    CHECK(tokens == lp["tokens"]);
    CHECK(offsets == lp["text_offset"]);
    // logprobs 0: the chosen token's alone.
    json zero = ask;
    zero["logprobs"] = 0;
    const auto z = post(port, "/v1/completions", zero)["choices"][0]["logprobs"];
    CHECK(z["top_logprobs"][0].size() == 1);
    // Without logprobs, null as before.
    json plain = ask;
    plain.erase("logprobs");
    CHECK(post(port, "/v1/completions", plain)["choices"][0]["logprobs"].is_null());
    const auto over = post(port, "/v1/completions", {{"prompt", "x"}, {"logprobs", 21}}, 400);
    CHECK(over["error"]["param"] == "logprobs");
}

TEST_CASE("sampling: chat logprobs in vLLM's shape, whole and streamed", "[sampling]") {
    auto replica = cpu_replica(tiny_dir);
    const auto port = replica->port();
    const json ask = {{"messages", chat_messages}, {"max_tokens", 5},  {"temperature", 0},
                      {"ignore_eos", true},        {"logprobs", true}, {"top_logprobs", 3}};
    const auto whole = post(port, "/v1/chat/completions", ask);
    const auto& content = whole["choices"][0]["logprobs"]["content"];
    REQUIRE(content.size() == 5);
    for (const auto& c : content) {
        const auto token = c["token"].get<std::string>();
        json bytes = json::array();
        for (const unsigned char b : token)
            bytes.push_back(b);
        CHECK(c["bytes"] == bytes);
        CHECK(c["logprob"].get<double>() <= 0.0);
        REQUIRE(c["top_logprobs"].size() == 3);
        CHECK(c["top_logprobs"][0]["token"] == c["token"]); // greedy: chosen is the likeliest
        CHECK(c["top_logprobs"][0]["logprob"] == c["logprob"]);
        CHECK(c["top_logprobs"][1]["logprob"].get<double>() <=
              c["top_logprobs"][0]["logprob"].get<double>());
    }
    json streamed = ask;
    streamed["stream"] = true;
    json tokens = json::array();
    for (const auto& e : events(port, "/v1/chat/completions", streamed)) {
        if (e["choices"].empty() || e["choices"][0]["logprobs"].is_null())
            continue;
        for (const auto& c : e["choices"][0]["logprobs"]["content"])
            tokens.push_back(c["token"]);
    }
    json expected = json::array();
    for (const auto& c : content)
        expected.push_back(c["token"]);
    CHECK(tokens == expected);
    // top_logprobs without logprobs: a 400 naming it, as vLLM.
    const auto bad =
        post(port, "/v1/chat/completions", {{"messages", chat_messages}, {"top_logprobs", 2}}, 400);
    CHECK(bad["error"]["param"] == "top_logprobs");
}

TEST_CASE("sampling: stop_token_ids end the output and name the id", "[sampling]") {
    auto replica = cpu_replica(tiny_dir);
    const auto port = replica->port();
    const json ask = {{"prompt", "the replica"},
                      {"max_tokens", 8},
                      {"temperature", 0},
                      {"ignore_eos", true},
                      {"logprobs", 0}};
    const auto free_run = post(port, "/v1/completions", ask);
    const auto& tokens = free_run["choices"][0]["logprobs"]["tokens"];
    REQUIRE(tokens.size() == 8);
    // The id of the third token, from /tokenize of its text; stop on it.
    const auto third = tokens[2].get<std::string>();
    const auto ids = post(port, "/tokenize", {{"prompt", third}, {"add_special_tokens", false}});
    if (ids["tokens"].size() != 1 || tokens[0] == tokens[2] || tokens[1] == tokens[2])
        return; // the text does not map back to one id, or it came earlier
    const auto id = ids["tokens"][0].get<std::int64_t>();
    json stop = ask;
    stop["stop_token_ids"] = {id};
    const auto stopped = post(port, "/v1/completions", stop)["choices"][0];
    CHECK(stopped["finish_reason"] == "stop");
    CHECK(stopped["stop_reason"] == id);
    CHECK(stopped["logprobs"]["tokens"].size() == 3); // the stop id counts, its text does not
    CHECK(stopped["text"] == tokens[0].get<std::string>() + tokens[1].get<std::string>());
    // min_tokens: the id is barred until 4 tokens are out, so the output goes past it.
    stop["min_tokens"] = 4;
    const auto held = post(port, "/v1/completions", stop)["choices"][0];
    CHECK(held["logprobs"]["tokens"].size() >= 4);
}

TEST_CASE("sampling: a model's generation_config.json gives the defaults", "[sampling]") {
    namespace fs = std::filesystem;
    const fs::path dir =
        fs::temp_directory_path() / ("lanes-genconfig-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    for (const char* f : {"tokenizer.json", "tokenizer_config.json"})
        fs::copy_file(fs::path(tiny_dir) / f, dir / f, fs::copy_options::overwrite_existing);
    std::ofstream(dir / "generation_config.json")
        << R"({"eos_token_id":[438,436],"temperature":0.0,"max_new_tokens":3,"typical_p":0.5})";
    {
        auto replica = cpu_replica(dir.string());
        const auto port = replica->port();
        // temperature 0 by default: two unseeded requests agree; max_new_tokens caps the output.
        const json ask = {{"prompt", "the replica"}, {"max_tokens", 10}, {"ignore_eos", true}};
        const auto a = post(port, "/v1/completions", ask);
        const auto b = post(port, "/v1/completions", ask);
        CHECK(a["choices"][0]["text"] == b["choices"][0]["text"]);
        CHECK(a["usage"]["completion_tokens"] == 3);
        const auto chat =
            post(port, "/v1/chat/completions", {{"messages", chat_messages}, {"ignore_eos", true}});
        CHECK(chat["usage"]["completion_tokens"] == 3);
        // A request's own value wins: at temperature 1.5 two seeds differ somewhere.
        bool differ = false;
        for (int seed = 0; seed < 8 && !differ; ++seed) {
            json hot = ask;
            hot["temperature"] = 1.5;
            hot["seed"] = seed;
            differ =
                post(port, "/v1/completions", hot)["choices"][0]["text"] != a["choices"][0]["text"];
        }
        CHECK(differ);
        const std::string log = replica->log();
        CHECK(log.find("temperature=0 max_tokens=3") != std::string::npos);
        CHECK(log.find("typical_p=0.5") != std::string::npos);
    }
    fs::remove_all(dir);
}

TEST_CASE("sampling: --max-logprobs bounds what a request may ask, and -1 lifts it", "[sampling]") {
    const json ask = {{"messages", chat_messages}, {"max_tokens", 1},  {"temperature", 0},
                      {"ignore_eos", true},        {"logprobs", true}, {"top_logprobs", -1}};
    {
        process replica(LANES_REPLICA_BIN,
                        {"--port", "0", "--backend", "cpu", "--max-logprobs", "-1"});
        REQUIRE(wait_healthy(replica.port(), 10s));
        const auto all = post(replica.port(), "/v1/chat/completions", ask);
        // -1: the whole byte vocabulary of 258 ids.
        CHECK(all["choices"][0]["logprobs"]["content"][0]["top_logprobs"].size() == 258);
    }
    process replica(LANES_REPLICA_BIN, {"--port", "0", "--backend", "cpu", "--max-logprobs", "5"});
    REQUIRE(wait_healthy(replica.port(), 10s));
    json six = ask;
    six["top_logprobs"] = 6;
    const auto refused = post(replica.port(), "/v1/chat/completions", six, 400);
    CHECK(refused["error"]["message"] ==
          "Requested sample logprobs of 6, which is greater than max allowed: 5");
    CHECK(refused["error"]["param"] == "top_logprobs");
    six["top_logprobs"] = 5;
    CHECK(post(replica.port(), "/v1/chat/completions",
               six)["choices"][0]["logprobs"]["content"][0]["top_logprobs"]
              .size() == 5);
}
