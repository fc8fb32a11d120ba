#include "common/openai/request.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <random>
#include <string>
#include <vector>

using namespace lanes::common;
using namespace lanes::common::openai;
using nlohmann::json;

namespace {

generation_request parse_ok(endpoint kind, const std::string& body) {
    auto out = parse_generation_request(kind, body);
    INFO(body);
    REQUIRE_FALSE(out.error);
    REQUIRE(out.request);
    return *out.request;
}

api_error parse_err(endpoint kind, const std::string& body) {
    auto out = parse_generation_request(kind, body);
    INFO(body);
    REQUIRE(out.error);
    REQUIRE_FALSE(out.request);
    REQUIRE(out.error->status == 400);
    REQUIRE(out.error->type == "BadRequestError");
    return *out.error;
}

// A valid completions body with `extra` members appended (extra starts with ',' or is empty).
std::string cmpl(const std::string& extra) {
    return R"({"model":"m","prompt":"hi")" + extra + "}";
}

std::string chat(const std::string& extra) {
    return R"({"model":"m","messages":[{"role":"user","content":"hi"}])" + extra + "}";
}

} // namespace

TEST_CASE("completions request parses with defaults", "[openai]") {
    auto r = parse_ok(endpoint::completions, R"({"prompt":"Hello"})");
    CHECK(r.kind == endpoint::completions);
    CHECK(r.prompt == "Hello");
    CHECK(r.prompt_token_ids.empty());
    CHECK_FALSE(r.model);
    CHECK_FALSE(r.max_tokens);
    CHECK_FALSE(r.temperature); // unset: the model's default, else vLLM's neutral value
    CHECK_FALSE(r.top_p);
    CHECK_FALSE(r.top_k);
    CHECK_FALSE(r.logprobs);
    CHECK(r.n == 1);
    CHECK_FALSE(r.stream);
    CHECK_FALSE(r.include_usage);
    CHECK(r.stop.empty());
    CHECK_FALSE(r.seed);
    CHECK_FALSE(r.ignore_eos);
    CHECK_FALSE(r.user);
}

TEST_CASE("completions request reads every field", "[openai]") {
    auto r = parse_ok(endpoint::completions,
                      R"({"model":"tiny","prompt":["one"],"max_tokens":7,"temperature":0,
                          "top_p":0.5,"n":3,"stream":true,"stream_options":{"include_usage":true},
                          "stop":["a","b"],"seed":-5,"ignore_eos":true,"user":"u1"})");
    CHECK(r.model == "tiny");
    CHECK(r.prompt == "one");
    CHECK(r.max_tokens == 7);
    CHECK(r.temperature == 0.0);
    CHECK(r.top_p == 0.5);
    CHECK(r.n == 3);
    CHECK(r.stream);
    CHECK(r.include_usage);
    CHECK(r.stop == std::vector<std::string>{"a", "b"});
    CHECK(r.seed == -5);
    CHECK(r.ignore_eos);
    CHECK(r.user == "u1");
}

TEST_CASE("completions prompt as token ids", "[openai]") {
    auto r = parse_ok(endpoint::completions, R"({"prompt":[256,104,105,0,257]})");
    CHECK(r.prompt_token_ids == std::vector<std::uint32_t>{256, 104, 105, 0, 257});
    CHECK(r.prompt.empty());
    auto nested = parse_ok(endpoint::completions, R"({"prompt":[[1,2]]})");
    CHECK(nested.prompt_token_ids == std::vector<std::uint32_t>{1, 2});
}

TEST_CASE("null optional fields count as absent", "[openai]") {
    auto r = parse_ok(endpoint::completions,
                      cmpl(R"(,"max_tokens":null,"temperature":null,"top_p":null,"n":null,
                              "stream":null,"stream_options":null,"stop":null,"seed":null,
                              "ignore_eos":null,"user":null)"));
    CHECK_FALSE(r.max_tokens);
    CHECK_FALSE(r.temperature);
    CHECK_FALSE(parse_ok(endpoint::completions, R"({"prompt":"hi","model":null})").model);
}

TEST_CASE("invalid JSON and non-object bodies are rejected", "[openai]") {
    for (const char* body : {"", "{", "not json", "{\"prompt\":}", "[1,2"}) {
        auto e = parse_err(endpoint::completions, body);
        CHECK(e.message.find("JSON") != std::string::npos);
        CHECK_FALSE(e.param);
    }
    for (const char* body : {"[]", "1", "\"prompt\"", "null", "true"}) {
        auto e = parse_err(endpoint::chat_completions, body);
        CHECK(e.message.find("must be a JSON object") != std::string::npos);
    }
}

TEST_CASE("completions prompt errors name 'prompt'", "[openai]") {
    const std::vector<std::string> bodies = {R"({})",
                                             R"({"prompt":null})",
                                             R"({"prompt":5})",
                                             R"({"prompt":{}})",
                                             R"({"prompt":[]})",
                                             R"({"prompt":[1,"a"]})",
                                             R"({"prompt":[-1]})",
                                             R"({"prompt":[258]})",
                                             R"({"prompt":[1.5]})",
                                             R"({"prompt":[true]})",
                                             R"({"prompt":[[]]})",
                                             R"({"prompt":[[1,"x"]]})",
                                             R"({"prompt":["a",1]})",
                                             R"({"prompt":[18446744073709551615]})"};
    for (const auto& body : bodies) {
        CHECK(parse_err(endpoint::completions, body).param == "prompt");
    }
    auto batched = parse_err(endpoint::completions, R"({"prompt":["a","b"]})");
    CHECK(batched.param == "prompt");
    CHECK(batched.message == "batched prompts are not supported; send one prompt per request");
}

TEST_CASE("chat messages are parsed and rendered", "[openai]") {
    auto r = parse_ok(endpoint::chat_completions,
                      R"({"messages":[{"role":"system","content":"S"},
                                      {"role":"user","content":[{"type":"text","text":"a"},
                                                                {"type":"text","text":"b"}]},
                                      {"role":"assistant","content":null},
                                      {"role":"developer","content":"d"},
                                      {"role":"tool","content":"t"}]})");
    REQUIRE(r.messages.size() == 5);
    CHECK(r.messages[1].content == "ab");
    CHECK(r.messages[2].content.empty());
    CHECK(r.prompt == render_chat(r.messages));
    CHECK(r.prompt == "<|system|>\nS\n<|user|>\nab\n<|assistant|>\n\n<|developer|>\nd\n"
                      "<|tool|>\nt\n<|assistant|>\n");
}

TEST_CASE("chat message errors name 'messages'", "[openai]") {
    const std::vector<std::string> bodies = {
        R"({})",
        R"({"messages":null})",
        R"({"messages":[]})",
        R"({"messages":"hi"})",
        R"({"messages":[1]})",
        R"({"messages":[{"content":"x"}]})",
        R"({"messages":[{"role":5,"content":"x"}]})",
        R"({"messages":[{"role":"","content":"x"}]})",
        R"({"messages":[{"role":"user","content":5}]})",
        R"({"messages":[{"role":"user","content":{"text":"x"}}]})",
        R"({"messages":[{"role":"user","content":[{"type":"image_url","image_url":"u"}]}]})",
        R"({"messages":[{"role":"user","content":[{"type":"text"}]}]})",
        R"({"messages":[{"role":"user","content":[{"type":"text","text":3}]}]})",
        R"({"messages":[{"role":"user","content":["x"]}]})",
    };
    for (const auto& body : bodies) {
        CHECK(parse_err(endpoint::chat_completions, body).param == "messages");
    }
}

TEST_CASE("max_tokens and max_completion_tokens", "[openai]") {
    CHECK(parse_ok(endpoint::chat_completions, chat(R"(,"max_tokens":5)")).max_tokens == 5);
    CHECK(parse_ok(endpoint::chat_completions, chat(R"(,"max_completion_tokens":6)")).max_tokens ==
          6);
    CHECK(parse_ok(endpoint::chat_completions, chat(R"(,"max_tokens":5,"max_completion_tokens":9)"))
              .max_tokens == 9);
    // completions has no max_completion_tokens.
    CHECK_FALSE(parse_ok(endpoint::completions, cmpl(R"(,"max_completion_tokens":6)")).max_tokens);
    for (const char* bad : {R"(,"max_tokens":0)", R"(,"max_tokens":-3)", R"(,"max_tokens":1.5)",
                            R"(,"max_tokens":"5")", R"(,"max_tokens":true)",
                            R"(,"max_tokens":18446744073709551615)"}) {
        CHECK(parse_err(endpoint::completions, cmpl(bad)).param == "max_tokens");
        CHECK(parse_err(endpoint::chat_completions, chat(bad)).param == "max_tokens");
    }
    CHECK(parse_err(endpoint::chat_completions, chat(R"(,"max_completion_tokens":0)")).param ==
          "max_completion_tokens");
}

TEST_CASE("sampling parameter errors", "[openai]") {
    struct bad_case {
        const char* extra;
        const char* param;
    };
    const std::vector<bad_case> cases = {
        {R"(,"temperature":"hot")", "temperature"},
        {R"(,"temperature":-0.1)", "temperature"},
        {R"(,"top_p":0)", "top_p"},
        {R"(,"top_p":1.1)", "top_p"},
        {R"(,"top_p":[])", "top_p"},
        {R"(,"n":0)", "n"},
        {R"(,"n":2.5)", "n"},
        {R"(,"stream":"yes")", "stream"},
        {R"(,"stream":1)", "stream"},
        {R"(,"stream_options":{"include_usage":true})", "stream_options"},
        {R"(,"stream":false,"stream_options":{})", "stream_options"},
        {R"(,"stream":true,"stream_options":true)", "stream_options"},
        {R"(,"stream":true,"stream_options":{"include_usage":"y"})", "stream_options"},
        {R"(,"stop":5)", "stop"},
        {R"(,"stop":["a",1])", "stop"},
        {R"(,"seed":"1")", "seed"},
        {R"(,"seed":1.5)", "seed"},
        {R"(,"ignore_eos":0)", "ignore_eos"},
        {R"(,"user":7)", "user"},
        {R"(,"model":7)", "model"},
    };
    for (const auto& c : cases) {
        INFO(c.extra);
        CHECK(parse_err(endpoint::completions, cmpl(c.extra)).param == c.param);
        CHECK(parse_err(endpoint::chat_completions, chat(c.extra)).param == c.param);
    }
    auto e = parse_err(endpoint::completions, cmpl(R"(,"temperature":"hot")"));
    CHECK(e.message == "'temperature' must be a number");
}

TEST_CASE("boundary values are accepted", "[openai]") {
    auto r = parse_ok(endpoint::completions,
                      cmpl(R"(,"temperature":2,"top_p":1,"n":1,"stop":["a","b","c","d"])"));
    CHECK(r.temperature == 2.0);
    CHECK(r.stop.size() == 4);
    CHECK(parse_ok(endpoint::completions, cmpl(R"(,"stop":[])")).stop.empty());
    CHECK(parse_ok(endpoint::completions, cmpl(R"(,"stop":"x")")).stop ==
          std::vector<std::string>{"x"});
    CHECK(parse_ok(endpoint::completions, cmpl(R"(,"n":8)")).n == 8);
    // Given at all, stream_options asks for usage unless it says otherwise (vLLM's default).
    CHECK(parse_ok(endpoint::completions, cmpl(R"(,"stream":true,"stream_options":{})"))
              .include_usage);
    CHECK_FALSE(parse_ok(endpoint::completions,
                         cmpl(R"(,"stream":true,"stream_options":{"include_usage":false})"))
                    .include_usage);
    CHECK_FALSE(parse_ok(endpoint::completions, cmpl(R"(,"stream":true)")).include_usage);
}

TEST_CASE("vLLM's bounds, not OpenAI's stricter ones", "[openai]") {
    CHECK(parse_ok(endpoint::completions, cmpl(R"(,"temperature":5)")).temperature == 5.0);
    CHECK(
        parse_ok(endpoint::completions, cmpl(R"(,"stop":["a","b","c","d","e","f"])")).stop.size() ==
        6);
    CHECK(parse_ok(endpoint::completions, cmpl(R"(,"max_tokens":16.0)")).max_tokens == 16);
    const auto custom =
        parse_ok(endpoint::chat_completions, R"({"messages":[{"role":"narrator","content":"x"}]})");
    REQUIRE(custom.messages.size() == 1);
    CHECK(custom.messages[0].role == "narrator");
}

TEST_CASE("fields asking for what replicas do not do are noted, not refused", "[openai]") {
    CHECK_FALSE(parse_ok(endpoint::completions, cmpl("")).unsupported);
    CHECK_FALSE(parse_ok(endpoint::completions, cmpl(R"(,"logprobs":0)")).unsupported);
    CHECK_FALSE(parse_ok(endpoint::chat_completions, chat(R"(,"logprobs":true)")).unsupported);
    CHECK(parse_ok(endpoint::completions, cmpl(R"(,"prompt_logprobs":1)")).unsupported ==
          "prompt_logprobs");
    CHECK(parse_ok(endpoint::completions, cmpl(R"(,"logit_bias":{"5":-100})")).unsupported ==
          "logit_bias");
    CHECK_FALSE(parse_ok(endpoint::completions, cmpl(R"(,"logit_bias":{})")).unsupported);
    CHECK(parse_ok(endpoint::chat_completions, chat(R"(,"allowed_token_ids":[1,2])")).unsupported ==
          "allowed_token_ids");
    CHECK_FALSE(parse_ok(endpoint::chat_completions, chat(R"(,"bad_words":[])")).unsupported);
    CHECK(parse_ok(endpoint::chat_completions, chat(R"(,"bad_words":["x"])")).unsupported ==
          "bad_words");
    CHECK(parse_ok(endpoint::completions, cmpl(R"(,"echo":true)")).unsupported == "echo");
    CHECK_FALSE(parse_ok(endpoint::completions, cmpl(R"(,"best_of":1)")).unsupported);
    CHECK(parse_ok(endpoint::completions, cmpl(R"(,"best_of":3)")).unsupported == "best_of");
}

TEST_CASE("parse_generation_request never throws on malformed input", "[openai]") {
    const std::vector<std::string> seeds = {
        cmpl(
            R"(,"max_tokens":5,"stream":true,"stream_options":{"include_usage":true},"stop":["x"])"),
        chat(R"(,"temperature":0.5,"top_p":0.9,"seed":3,"user":"u")"),
        R"({"messages":[{"role":"user","content":[{"type":"text","text":"\u00e9\ud83d\ude00"}]}]})",
        R"({"prompt":[[1,2,3]],"n":2})",
    };
    const std::vector<std::string> junk = {"\xff\xfe", "\"\\ud800\"", "[[[[[[[[", "1e999999",
                                           "-",        "{}",          "null",     "\"\\u0000\""};
    std::size_t runs = 0;
    for (const auto& seed : seeds) {
        for (std::size_t cut = 0; cut <= seed.size(); ++cut) {
            std::string truncated = seed.substr(0, cut);
            for (endpoint kind : {endpoint::completions, endpoint::chat_completions}) {
                REQUIRE_NOTHROW(parse_generation_request(kind, truncated));
                for (const auto& j : junk) {
                    std::string spliced = truncated + j + seed.substr(cut);
                    REQUIRE_NOTHROW(parse_generation_request(kind, spliced));
                    ++runs;
                }
            }
        }
        // Replace each value-ish character with other JSON tokens.
        for (std::size_t i = 0; i < seed.size(); ++i) {
            for (const char* rep : {"null", "[]", "{}", "0", "\"\"", "-1", "true"}) {
                std::string mutated = seed.substr(0, i) + rep + seed.substr(i + 1);
                REQUIRE_NOTHROW(parse_generation_request(endpoint::chat_completions, mutated));
                REQUIRE_NOTHROW(parse_generation_request(endpoint::completions, mutated));
                ++runs;
            }
        }
    }
    REQUIRE(runs > 1000);
    REQUIRE_NOTHROW(parse_generation_request(endpoint::completions,
                                             std::string(100000, '[') + std::string(100000, ']')));
}

TEST_CASE("a body is bounded before its DOM is built: nesting, values, stop strings", "[openai]") {
    // 100,000 '[' would nest far past 64; 20,000 empty arrays pass a depth check but not the
    // value budget given here.
    const std::string deep = R"({"prompt":"x","extra":)" + std::string(100000, '[') + "}";
    CHECK(parse_err(endpoint::completions, deep).message.find("--json-max-depth") !=
          std::string::npos);
    std::string wide = R"({"prompt":"x","extra":[)";
    for (int i = 0; i < 20000; ++i)
        wide += "[],";
    wide += "[]]}";
    request_limits small;
    small.max_values = 10000;
    auto out = parse_generation_request(endpoint::completions, wide, small);
    REQUIRE(out.error);
    CHECK(out.error->message.find("--json-max-values") != std::string::npos);
    CHECK_FALSE(parse_generation_request(endpoint::completions, wide).error); // default: 1M

    // Stop strings: 16 by default, 512 bytes each; 0 lifts the count.
    std::string stops = "[";
    for (int i = 0; i < 17; ++i)
        stops += (i ? ",\"s" : "\"s") + std::to_string(i) + "\"";
    stops += "]";
    const auto many = R"({"prompt":"x","stop":)" + stops + "}";
    const auto e = parse_err(endpoint::completions, many);
    CHECK(e.param == "stop");
    CHECK(e.message.find("16") != std::string::npos);
    request_limits uncapped;
    uncapped.max_stop_strings = 0;
    CHECK(parse_generation_request(endpoint::completions, many, uncapped).request->stop.size() ==
          17);
    const auto long_stop = R"({"prompt":"x","stop":")" + std::string(513, 'a') + "\"}";
    CHECK(parse_err(endpoint::completions, long_stop).message.find("512") != std::string::npos);
    CHECK(
        parse_ok(endpoint::completions, R"({"prompt":"x","stop":")" + std::string(512, 'a') + "\"}")
            .stop.front()
            .size() == 512);
}

TEST_CASE("a read field given twice or with escapes is refused by name, as at the router",
          "[openai]") {
    CHECK(parse_err(endpoint::completions, R"({"prompt":"a","prompt":"b"})").param == "prompt");
    CHECK(parse_err(endpoint::completions, R"({"prompt":"a","mod\u0065l":"m"})").param == "model");
    CHECK(parse_err(endpoint::chat_completions,
                    R"({"messages":[{"role":"user","content":"a","content":"b"}]})")
              .param == "messages[0].content");
    // Others keep vLLM's reading: the last one counts.
    CHECK(parse_ok(endpoint::completions, R"({"prompt":"a","temperature":2,"temperature":0})")
              .temperature == 0.0);
}

TEST_CASE("vLLM's sampling fields parse", "[openai]") {
    const auto r = parse_ok(
        endpoint::completions,
        cmpl(R"(,"top_k":5,"min_p":0.1,"repetition_penalty":1.3,"presence_penalty":-2,)"
             R"("frequency_penalty":2,"min_tokens":3,"stop_token_ids":[7,9,7],"logprobs":2)"));
    CHECK(r.top_k == 5);
    CHECK(r.min_p == 0.1);
    CHECK(r.repetition_penalty == 1.3);
    CHECK(r.presence_penalty == -2.0);
    CHECK(r.frequency_penalty == 2.0);
    CHECK(r.min_tokens == 3);
    CHECK(r.stop_token_ids == std::vector<std::int64_t>{7, 9}); // duplicates dropped, as vLLM
    CHECK(r.logprobs == 2);
    CHECK(parse_ok(endpoint::completions, cmpl(R"(,"top_k":-1)")).top_k == -1);
    CHECK(parse_ok(endpoint::completions, cmpl(R"(,"top_k":0)")).top_k == 0);
    CHECK(parse_ok(endpoint::completions, cmpl(R"(,"logprobs":0)")).logprobs == 0);
    CHECK(parse_ok(endpoint::completions, cmpl(R"(,"logprobs":-1)")).logprobs == -1);
    CHECK_FALSE(parse_ok(endpoint::completions, cmpl(R"(,"logprobs":null)")).logprobs);
    // Chat: logprobs is the flag, top_logprobs the count.
    CHECK(parse_ok(endpoint::chat_completions, chat(R"(,"logprobs":true)")).logprobs == 0);
    CHECK(parse_ok(endpoint::chat_completions, chat(R"(,"logprobs":true,"top_logprobs":3)"))
              .logprobs == 3);
    CHECK_FALSE(parse_ok(endpoint::chat_completions, chat(R"(,"logprobs":false)")).logprobs);
    CHECK_FALSE(parse_ok(endpoint::chat_completions, chat(R"(,"logprobs":false,"top_logprobs":0)"))
                    .logprobs);
}

TEST_CASE("vLLM's sampling bounds are 400s naming the field", "[openai]") {
    struct bad_case {
        const char* extra;
        const char* param;
        const char* message;
    };
    // Messages of SamplingParams._verify_args and protocol.py's check_logprobs.
    const std::vector<bad_case> cases = {
        {R"(,"top_k":-2)", "top_k", "top_k must be 0 (disable), or at least 1, got -2."},
        {R"(,"top_k":1.5)", "top_k", "'top_k' must be an integer"},
        {R"(,"min_p":1.5)", "min_p", "min_p must be in [0, 1], got 1.5."},
        {R"(,"min_p":-0.1)", "min_p", "min_p must be in [0, 1], got -0.1."},
        {R"(,"repetition_penalty":0)", "repetition_penalty",
         "repetition_penalty must be greater than zero, got 0.0."},
        {R"(,"presence_penalty":2.5)", "presence_penalty",
         "presence_penalty must be in [-2, 2], got 2.5."},
        {R"(,"frequency_penalty":-3)", "frequency_penalty",
         "frequency_penalty must be in [-2, 2], got -3.0."},
        {R"(,"min_tokens":-1)", "min_tokens",
         "min_tokens must be greater than or equal to 0, got -1."},
        {R"(,"stop_token_ids":[1,"x"])", "stop_token_ids",
         "stop_token_ids must contain only integers"},
        {R"(,"stop_token_ids":5)", "stop_token_ids",
         "'stop_token_ids' must be an array of integers"},
        {R"(,"presence_penalty":"x")", "presence_penalty", "'presence_penalty' must be a number"},
    };
    for (const auto& c : cases) {
        INFO(c.extra);
        for (endpoint kind : {endpoint::completions, endpoint::chat_completions}) {
            const auto e =
                parse_err(kind, kind == endpoint::completions ? cmpl(c.extra) : chat(c.extra));
            CHECK(e.param == c.param);
            CHECK(e.message == c.message);
        }
    }
    const auto neg = parse_err(endpoint::completions, cmpl(R"(,"logprobs":-2)"));
    CHECK(neg.param == "logprobs");
    CHECK(neg.message == "`logprobs` must be a positive value or -1.");
    const auto top = parse_err(endpoint::chat_completions, chat(R"(,"top_logprobs":2)"));
    CHECK(top.param == "top_logprobs");
    CHECK(top.message == "when using `top_logprobs`, `logprobs` must be set to true.");
    CHECK(parse_err(endpoint::chat_completions, chat(R"(,"logprobs":true,"top_logprobs":-3)"))
              .param == "top_logprobs");
    CHECK(parse_err(endpoint::chat_completions, chat(R"(,"logprobs":"yes")")).param == "logprobs");
    CHECK(parse_err(endpoint::completions, cmpl(R"(,"logprobs":"2")")).param == "logprobs");
}
