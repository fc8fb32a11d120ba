#include "common/openai/response.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <random>
#include <string>

using namespace lanes::common;
using namespace lanes::common::openai;
using nlohmann::json;

namespace {

response_meta meta() {
    return {"cmpl-abc", 1700000000, "tiny"};
}

} // namespace

TEST_CASE("make_id has the prefix and 32 lowercase hex characters", "[openai]") {
    auto a = make_id("cmpl-");
    auto b = make_id("cmpl-");
    REQUIRE(a.size() == 5 + 32);
    REQUIRE(a.starts_with("cmpl-"));
    REQUIRE(a.substr(5).find_first_not_of("0123456789abcdef") == std::string::npos);
    REQUIRE(a != b);
}

TEST_CASE("completion_json for completions", "[openai]") {
    auto j =
        json::parse(completion_json(endpoint::completions, meta(), "out", "length", {3, 4, {}}));
    CHECK(j["id"] == "cmpl-abc");
    CHECK(j["object"] == "text_completion");
    CHECK(j["created"] == 1700000000);
    CHECK(j["model"] == "tiny");
    REQUIRE(j["choices"].size() == 1);
    const auto& c = j["choices"][0];
    CHECK(c["index"] == 0);
    CHECK(c["text"] == "out");
    CHECK(c["logprobs"].is_null());
    CHECK(c["finish_reason"] == "length");
    CHECK(c["stop_reason"].is_null());
    CHECK(j["usage"] == json{{"prompt_tokens", 3}, {"total_tokens", 7}, {"completion_tokens", 4}});
}

TEST_CASE("completion_json for chat includes cached tokens when known", "[openai]") {
    auto j =
        json::parse(completion_json(endpoint::chat_completions, meta(), "hey", "stop", {10, 2, 8}));
    CHECK(j["object"] == "chat.completion");
    const auto& c = j["choices"][0];
    CHECK(c["index"] == 0);
    CHECK(c["message"] == json{{"role", "assistant"}, {"content", "hey"}});
    CHECK(c["logprobs"].is_null());
    CHECK(c["finish_reason"] == "stop");
    CHECK(c["stop_reason"].is_null());
    CHECK(j["usage"]["total_tokens"] == 12);
    CHECK(j["usage"]["prompt_tokens_details"]["cached_tokens"] == 8);
}

TEST_CASE("stream chunks", "[openai]") {
    auto role = json::parse(chat_role_chunk(meta()));
    CHECK(role["object"] == "chat.completion.chunk");
    CHECK(role["choices"][0]["delta"] == json{{"role", "assistant"}, {"content", ""}});
    CHECK(role["choices"][0]["finish_reason"].is_null());
    CHECK(role["choices"][0]["logprobs"].is_null());

    auto d = json::parse(delta_chunk(endpoint::chat_completions, meta(), "ab"));
    CHECK(d["object"] == "chat.completion.chunk");
    CHECK(d["choices"][0]["delta"] == json{{"content", "ab"}});
    CHECK(d["choices"][0]["finish_reason"].is_null());
    auto last = json::parse(delta_chunk(endpoint::chat_completions, meta(), "", "stop"));
    CHECK(last["choices"][0]["finish_reason"] == "stop");

    auto t = json::parse(delta_chunk(endpoint::completions, meta(), "xy", "length"));
    CHECK(t["object"] == "text_completion");
    CHECK(t["choices"][0]["text"] == "xy");
    CHECK(t["choices"][0]["finish_reason"] == "length");
    CHECK(t["choices"][0]["stop_reason"].is_null());
    CHECK(t.contains("usage"));
    CHECK(t["usage"].is_null());
    CHECK(
        json::parse(delta_chunk(endpoint::completions, meta(), "x"))["choices"][0]["finish_reason"]
            .is_null());

    for (endpoint kind : {endpoint::completions, endpoint::chat_completions}) {
        auto u = json::parse(usage_chunk(kind, meta(), {5, 6, 0}));
        CHECK(u["object"] ==
              (kind == endpoint::completions ? "text_completion" : "chat.completion.chunk"));
        CHECK(u["choices"].is_array());
        CHECK(u["choices"].empty());
        CHECK(u["usage"]["total_tokens"] == 11);
        CHECK(u["usage"]["prompt_tokens_details"]["cached_tokens"] == 0);
    }
}

TEST_CASE("response JSON survives invalid UTF-8 and escapes control bytes", "[openai]") {
    std::string text = "ok \xff\xc3 \"q\"\n";
    std::string body;
    REQUIRE_NOTHROW(body = delta_chunk(endpoint::chat_completions, meta(), text));
    auto j = json::parse(body);
    CHECK(j["choices"][0]["delta"]["content"].get<std::string>().starts_with("ok "));
    auto plain = json::parse(completion_json(endpoint::completions, meta(), "a\"b\n", "stop", {}));
    CHECK(plain["choices"][0]["text"] == "a\"b\n");
}

// delta_chunk writes its JSON by hand; it must equal, byte for byte, dumping the same object
// built as a JSON tree, for any text: plain, escaped, control bytes, invalid UTF-8.
TEST_CASE("delta_chunk equals the JSON library's serialization", "[openai]") {
    using ojson = nlohmann::ordered_json;
    const auto reference = [](endpoint kind, const response_meta& m, std::string_view text,
                              std::string_view finish) {
        const bool completions = kind == endpoint::completions;
        ojson j = {{"id", m.id},
                   {"object", completions ? "text_completion" : "chat.completion.chunk"},
                   {"created", m.created},
                   {"model", m.model}};
        ojson c = {{"index", 0}};
        if (completions)
            c["text"] = text;
        else
            c["delta"] = {{"content", text}};
        c["logprobs"] = nullptr;
        c["finish_reason"] = finish.empty() ? ojson(nullptr) : ojson(finish);
        if (completions || !finish.empty())
            c["stop_reason"] = nullptr;
        j["choices"] = ojson::array({c});
        if (completions)
            j["usage"] = nullptr;
        return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
    };
    std::mt19937 rng(5);
    response_meta m{"cmpl-1f\"x", 1700000000, "lanes/tiny-\\model"};
    for (int i = 0; i < 2000; ++i) {
        std::string text(rng() % 12, ' ');
        const bool ascii = i % 2 == 0;
        for (auto& ch : text)
            ch = static_cast<char>(ascii ? 0x20 + rng() % 0x5f : rng() % 256);
        const std::string_view finish = i % 7 == 0 ? "stop" : "";
        for (endpoint kind : {endpoint::completions, endpoint::chat_completions})
            REQUIRE(delta_chunk(kind, m, text, finish) == reference(kind, m, text, finish));
    }
    CHECK(delta_chunk(endpoint::completions, meta(), "plain") ==
          reference(endpoint::completions, meta(), "plain", ""));
}

TEST_CASE("stop_reason names the stop string that ended the output", "[openai]") {
    const std::optional<std::string> stop = "\nEND";
    for (endpoint kind : {endpoint::completions, endpoint::chat_completions}) {
        const auto last = json::parse(delta_chunk(kind, meta(), "", "stop", stop));
        CHECK(last["choices"][0]["stop_reason"] == "\nEND");
        const auto whole =
            json::parse(completion_json(kind, meta(), "x", "stop", {1, 1, {}}, stop));
        CHECK(whole["choices"][0]["stop_reason"] == "\nEND");
        CHECK(json::parse(completion_json(kind, meta(), "x", "length",
                                          {1, 1, {}}))["choices"][0]["stop_reason"]
                  .is_null());
    }
    // A chat chunk before the last has no stop_reason at all, as vLLM leaves unset fields out.
    CHECK_FALSE(
        json::parse(delta_chunk(endpoint::chat_completions, meta(), "a"))["choices"][0].contains(
            "stop_reason"));
}

namespace {

// Two tokens: "é" (2 bytes, 1 code point) chosen over "x"; then "\xef\xbf\xbd" (a partial
// token, as vLLM shows it) chosen, not among the likeliest.
std::vector<token_logprob> two_tokens() {
    return {{{"\xc3\xa9", -0.5}, {{"\xc3\xa9", -0.5}, {"x", -1.5}}},
            {{"\xef\xbf\xbd", -20000.0}, {{"\xef\xbf\xbd", -20000.0}, {"y", -0.1}, {"z", -2.0}}}};
}

} // namespace

TEST_CASE("completions logprobs: tokens, token_logprobs, top_logprobs, text_offset", "[openai]") {
    std::size_t offset = 3;
    const auto j = json::parse(logprobs_json(endpoint::completions, two_tokens(), 2, offset));
    CHECK(j["tokens"] == json::array({"\xc3\xa9", "\xef\xbf\xbd"}));
    CHECK(j["token_logprobs"][0] == -0.5);
    CHECK(j["token_logprobs"][1] == -9999.0);       // floored, as vLLM
    CHECK(j["text_offset"] == json::array({3, 4})); // code points, from the offset given
    CHECK(offset == 5);
    CHECK(j["top_logprobs"][0] == json({{"\xc3\xa9", -0.5}, {"x", -1.5}}));
    CHECK(j["top_logprobs"][1].size() == 3); // the chosen one and the asked 2
    CHECK(j["top_logprobs"][1]["y"] == -0.1);
    const auto whole =
        json::parse(completion_json(endpoint::completions, meta(), "x", "stop", {1, 2, {}}, {},
                                    logprobs_json(endpoint::completions, two_tokens(), 2, offset)));
    CHECK(whole["choices"][0]["logprobs"]["tokens"].size() == 2);
    const auto chunk = json::parse(
        delta_chunk(endpoint::completions, meta(), "x", {}, {}, R"({"text_offset":[0]})"));
    CHECK(chunk["choices"][0]["logprobs"]["text_offset"][0] == 0);
}

TEST_CASE("chat logprobs: content entries with bytes and the first top_logprobs", "[openai]") {
    std::size_t offset = 0;
    const auto j = json::parse(logprobs_json(endpoint::chat_completions, two_tokens(), 1, offset));
    REQUIRE(j["content"].size() == 2);
    const auto& first = j["content"][0];
    CHECK(first["token"] == "\xc3\xa9");
    CHECK(first["logprob"] == -0.5);
    CHECK(first["bytes"] == json::array({0xc3, 0xa9}));
    REQUIRE(first["top_logprobs"].size() == 1);
    CHECK(first["top_logprobs"][0] ==
          json({{"token", "\xc3\xa9"}, {"logprob", -0.5}, {"bytes", json::array({0xc3, 0xa9})}}));
    CHECK(j["content"][1]["bytes"] == json::array({239, 191, 189}));
    CHECK(j["content"][1]["logprob"] == -9999.0);
    const auto none =
        json::parse(logprobs_json(endpoint::chat_completions, two_tokens(), 0, offset));
    CHECK(none["content"][0]["top_logprobs"].empty());
    const auto chunk = json::parse(
        delta_chunk(endpoint::chat_completions, meta(), "a", "stop", {}, R"({"content":[]})"));
    CHECK(chunk["choices"][0]["logprobs"] == json({{"content", json::array()}}));
}

TEST_CASE("stop_reason is the stop id when stop_token_ids ended the output", "[openai]") {
    stop_reason by_id;
    by_id.token = 42;
    for (endpoint kind : {endpoint::completions, endpoint::chat_completions}) {
        CHECK(json::parse(
                  delta_chunk(kind, meta(), "", "stop", by_id))["choices"][0]["stop_reason"] == 42);
        CHECK(json::parse(completion_json(kind, meta(), "x", "stop", {1, 1, {}},
                                          by_id))["choices"][0]["stop_reason"] == 42);
    }
}
