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
