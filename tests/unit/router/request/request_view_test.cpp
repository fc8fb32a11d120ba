#include "router/request/request_view.hpp"

#include <catch2/catch.hpp>

#include <random>

using namespace lanes;
using lanes::common::openai::endpoint;

TEST_CASE("the fast path agrees with the full parser on ordinary bodies", "[request_view]") {
    const std::vector<std::pair<endpoint, std::string>> bodies = {
        {endpoint::completions, R"({"model":"m","prompt":"Hello \"there\"\n","stream":true})"},
        {endpoint::completions, R"({"prompt":["one prompt"],"user":"u1","max_tokens":5})"},
        {endpoint::completions, R"({"prompt":[256,72,105],"stream":null})"},
        {endpoint::chat_completions,
         R"({"messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi\u00e9"}],"user":"u2"})"},
    };
    for (const auto& [kind, body] : bodies) {
        INFO(body);
        const auto fast = router::extract_request(kind, body);
        const auto full = common::openai::parse_generation_request(kind, body);
        REQUIRE(fast);
        REQUIRE(full.request);
        CHECK(fast->prompt() == full.request->prompt);
        CHECK(fast->prompt_token_ids == full.request->prompt_token_ids);
        CHECK(fast->model == full.request->model);
        CHECK(fast->user == full.request->user);
        CHECK(fast->stream == full.request->stream);
    }
}

TEST_CASE("a prompt without escapes is read where it lies in the body", "[request_view]") {
    const std::string body = R"({"prompt" : "plain text, no escapes"  , "model":"m"})";
    const auto view = router::extract_request(endpoint::completions, body);
    REQUIRE(view);
    CHECK(view->prompt() == "plain text, no escapes");
    CHECK(view->prompt().data() >= body.data());
    CHECK(view->prompt().data() < body.data() + body.size());
    CHECK(view->model == "m");
    // With an escape it is unescaped into a string of its own.
    const std::string escaped = R"({"prompt":"tab\there"})";
    const auto owned = router::extract_request(endpoint::completions, escaped);
    REQUIRE(owned);
    CHECK(owned->prompt() == "tab\there");
    CHECK(!owned->borrowed);
}

TEST_CASE("the fast path declines what the full parser must judge", "[request_view]") {
    const std::vector<std::pair<endpoint, std::string>> bodies = {
        {endpoint::completions, "{not json"},
        {endpoint::completions, R"([1,2])"},
        {endpoint::completions, R"({"prompt":42})"},
        {endpoint::completions, R"({"prompt":["a","b"]})"},
        {endpoint::completions, R"({"prompt":[1,"a"]})"},
        {endpoint::completions, R"({"prompt":[999]})"},
        {endpoint::completions, R"({"model":"m"})"},
        {endpoint::completions, R"({"prompt":"x","stream":"yes"})"},
        {endpoint::chat_completions, R"({"messages":[]})"},
        {endpoint::chat_completions, R"({"messages":"hi"})"},
        {endpoint::chat_completions,
         R"({"messages":[{"role":"user","content":[{"type":"text","text":"a"}]}]})"},
        {endpoint::chat_completions, R"({"messages":[{"role":"user","content":null}]})"},
    };
    for (const auto& [kind, body] : bodies) {
        INFO(body);
        CHECK(!router::extract_request(kind, body));
    }
}

namespace {

void check_same(const router::request_view& a, const router::request_view& b) {
    CHECK(a.prompt() == b.prompt());
    CHECK(a.prompt_token_ids == b.prompt_token_ids);
    CHECK(a.model == b.model);
    CHECK(a.user == b.user);
    CHECK(a.stream == b.stream);
}

} // namespace

TEST_CASE("the one-pass scanner reads what the on-demand parser reads", "[request_view]") {
    const std::vector<std::string> bodies = {
        R"({"model":"m","prompt":"Hello \"there\"\n\t\/\\","stream":true})",
        R"( { "prompt" : "p" , "stream" : false , "user" : null , "model" : null } )",
        R"({"prompt":"a","max_tokens":16,"temperature":0.5,"stop":["x","y"],"n":1})",
        R"({"prompt":"a","logit_bias":{"1":-1.5e3,"2":0},"echo":false,"suffix":null})",
        R"({"prompt":"first","prompt":"second","user":"u","user":"v"})",
        R"({"prompt":"","stream":true,"stream_options":{"include_usage":true}})",
        "{\n\t\"prompt\":\"x\"\r\n}\n",
    };
    for (const auto& body : bodies) {
        INFO(body);
        const auto fast = router::scan_completion_request(body);
        const auto slow = router::extract_request_on_demand(endpoint::completions, body);
        REQUIRE(fast);
        REQUIRE(slow);
        check_same(*fast, *slow);
    }
    const std::string body = R"({"prompt":"plain, borrowed"})";
    const auto fast = router::scan_completion_request(body);
    REQUIRE(fast);
    REQUIRE(fast->borrowed);
    CHECK(fast->borrowed->data() == body.data() + 11);
}

TEST_CASE("the one-pass scanner declines what it does not handle", "[request_view]") {
    const std::vector<std::string> bodies = {
        "",
        "{",
        "{}",
        "[]",
        R"({"model":"m"})",
        R"({"prompt":["a"]})",
        R"({"prompt":[1,2]})",
        R"({"prompt":"caf\u00e9"})",
        "{\"prompt\":\"caf\xc3\xa9\"}", // \u and UTF-8: on demand
        R"({"prompt":"a",})",
        R"({"prompt":"a"} x)",
        R"({"prompt":"a" "b"})",
        R"({"prompt":"a","n":01})",
        R"({"prompt":"a","n":-})",
        R"({"prompt":"a","n":1.})",
        R"({"prompt":"a","n":1e})",
        R"({"prompt":"a","x":tru})",
        R"({"prompt":"a","x":[1,]})",
        R"({"prompt":"a","x":{"k" 1}})",
        R"({"prompt":"a\q"})",
        "{\"prompt\":\"a\tb\"}",
        R"({"prompt":"a","stream":"yes"})",
        R"({"prompt":"a","model":7})",
        R"({"pro\u006dpt":"a"})",
        R"({"prompt":"a","x":)" + std::string(40, '[') + std::string(40, ']') + "}",
    };
    for (const auto& body : bodies) {
        INFO(body);
        CHECK(!router::scan_completion_request(body));
    }
}

TEST_CASE("the one-pass scanner accepts nothing the on-demand parser reads differently",
          "[request_view]") {
    // Random damage to valid bodies: whatever the scanner still accepts, the on-demand parser
    // must accept too, with the same fields.
    const std::vector<std::string> seeds = {
        R"({"model":"m","prompt":"Hello \"x\"\n","stream":true,"max_tokens":5})",
        R"({"prompt":"p","logit_bias":{"1":-1.5e3},"stop":["a",null,true],"user":"u"})",
    };
    std::mt19937 rng(7);
    const std::string alphabet = "{}[]\":,\\ \n0123456789-+.eEtrufalsn\"pmx";
    int accepted = 0;
    for (int round = 0; round < 20000; ++round) {
        std::string body = seeds[round % seeds.size()];
        const int edits = 1 + static_cast<int>(rng() % 3);
        for (int e = 0; e < edits && !body.empty(); ++e) {
            const std::size_t at = rng() % body.size();
            const char c = alphabet[rng() % alphabet.size()];
            switch (rng() % 3) {
            case 0:
                body[at] = c;
                break;
            case 1:
                body.insert(body.begin() + static_cast<std::ptrdiff_t>(at), c);
                break;
            default:
                body.erase(at, 1);
                break;
            }
        }
        const auto fast = router::scan_completion_request(body);
        if (!fast)
            continue;
        ++accepted;
        INFO(body);
        const auto slow = router::extract_request_on_demand(endpoint::completions, body);
        REQUIRE(slow);
        check_same(*fast, *slow);
    }
    CHECK(accepted > 100); // the damage left enough bodies valid to compare
}
