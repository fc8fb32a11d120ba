// What the router reads of a body: only what it routes on, with one meaning; everything else, and
// anything it cannot make out, is the engine's to judge.
#include "router/request/request_view.hpp"

#include <catch2/catch.hpp>

#include <deque>
#include <string>
#include <vector>

using namespace lanes;
using router::body_kind;

namespace {

// The view borrows from the body (a prompt without escapes is not copied): a body given as a
// temporary is kept for the whole run, one given by name is read where it is.
router::request_view read_ok(body_kind kind, const std::string& body);
router::request_view read_ok(body_kind kind, std::string&& text) {
    static std::deque<std::string> kept;
    return read_ok(kind, static_cast<const std::string&>(kept.emplace_back(std::move(text))));
}

router::request_view read_ok(body_kind kind, const std::string& body) {
    INFO(body);
    auto r = router::read_request(kind, body);
    INFO((r.error ? r.error->message : std::string()));
    REQUIRE_FALSE(r.error);
    REQUIRE(r.view);
    return std::move(*r.view);
}

common::openai::api_error read_refused(body_kind kind, const std::string& body) {
    INFO(body);
    auto r = router::read_request(kind, body);
    REQUIRE(r.error);
    CHECK(r.error->status == 400);
    return *r.error;
}

} // namespace

TEST_CASE("completions: a text prompt, one of a batch, or token ids of any size",
          "[request_view]") {
    auto v = read_ok(body_kind::completions, R"({"model":"m","prompt":"Hello","stream":true})");
    CHECK(v.prompt() == "Hello");
    CHECK(v.model == "m");
    CHECK(v.stream);
    // A batch is routed on its first prompt.
    v = read_ok(body_kind::completions, R"({"prompt":["first one","second"],"user":"u1"})");
    CHECK(v.prompt() == "first one");
    CHECK(v.user == "u1");
    // Llama-3 ids are far above a byte vocabulary: read as they are.
    v = read_ok(body_kind::completions, R"({"prompt":[128000,9906,1917]})");
    CHECK(v.prompt_token_ids == std::vector<std::uint32_t>{128000, 9906, 1917});
    v = read_ok(body_kind::completions, R"({"prompt":[[1,2,3],[4,5]]})");
    CHECK(v.prompt_token_ids == std::vector<std::uint32_t>{1, 2, 3});
    // Not ids (a negative, a fraction, one past 32 bits): nothing to route on, nothing refused.
    for (const char* body :
         {R"({"prompt":[1,-2]})", R"({"prompt":[1,2.5]})", R"({"prompt":[4294967296]})",
          R"({"prompt":42})", R"({"prompt":null,"model":7,"stream":"yes"})"}) {
        v = read_ok(body_kind::completions, body);
        CHECK(v.prompt().empty());
        CHECK(v.prompt_token_ids.empty());
        CHECK_FALSE(v.model);
        CHECK_FALSE(v.stream);
    }
}

TEST_CASE("chat: content parts keep their text, other parts a hash of their payload",
          "[request_view]") {
    const std::string image_a = R"({"type":"image_url","image_url":{"url":"https://x/a.png"}})";
    const std::string image_b = R"({"type":"image_url","image_url":{"url":"https://x/b.png"}})";
    const auto body = [](const std::string& image) {
        return R"({"messages":[{"role":"user","content":[{"type":"text","text":"look: "},)" +
               image + R"(]}],"max_tokens":5})";
    };
    const auto a = read_ok(body_kind::chat, body(image_a));
    const auto a2 = read_ok(body_kind::chat, body(image_a));
    const auto b = read_ok(body_kind::chat, body(image_b));
    CHECK(a.prompt().find("<|user|>\nlook: <|image_url:") == 0);
    CHECK(a.prompt() == a2.prompt()); // the same image, the same affinity
    CHECK(a.prompt() != b.prompt());
    // Every other part type too; content null (a tool call) and tool results pass.
    const auto c = read_ok(
        body_kind::chat,
        R"({"messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}},{"type":"file","file":{"file_id":"f1"}}]},)"
        R"({"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{}"}}]},)"
        R"({"role":"tool","tool_call_id":"c1","content":"42"}]})");
    CHECK(c.prompt().find("<|input_audio:") != std::string::npos);
    CHECK(c.prompt().find("<|file:") != std::string::npos);
    CHECK(c.prompt().find("<|tool|>\n42\n") != std::string::npos);
}

TEST_CASE("chat: tool definitions are part of the affinity key", "[request_view]") {
    const auto plain = read_ok(body_kind::chat, R"({"messages":[{"role":"user","content":"hi"}]})");
    const auto with_tools = read_ok(
        body_kind::chat,
        R"({"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"get_weather"}}],"tool_choice":"auto","response_format":{"type":"json_object"}})");
    const auto other_tools = read_ok(
        body_kind::chat,
        R"({"messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"get_time"}}]})");
    CHECK(plain.context_hash == 0);
    CHECK(with_tools.context_hash != 0);
    CHECK(with_tools.context_hash != other_tools.context_hash);
    CHECK(plain.prompt() == with_tools.prompt());
}

TEST_CASE("responses: instructions, input and the previous response", "[request_view]") {
    auto v = read_ok(body_kind::responses,
                     R"({"model":"m","instructions":"Be brief.","input":"Hi","stream":true})");
    CHECK(v.prompt() == "<|system|>\nBe brief.\n<|user|>\nHi\n<|assistant|>\n");
    CHECK(v.stream);
    v = read_ok(
        body_kind::responses,
        R"({"input":[{"role":"user","content":[{"type":"input_text","text":"one"}]},{"type":"function_call_output","call_id":"c","output":"7"}],"previous_response_id":"resp_1"})");
    CHECK(v.prompt().find("<|user|>\none\n") == 0);
    CHECK(v.prompt().find("7") != std::string::npos);
    CHECK(v.previous_response_id == "resp_1");
}

TEST_CASE("other endpoints: only the model is read", "[request_view]") {
    const auto v =
        read_ok(body_kind::other, R"({"model":"e5","input":["a","b"],"prompt":"x","messages":7})");
    CHECK(v.model == "e5");
    CHECK(v.prompt().empty());
    // A field it does not read may come twice (the engine decides what that means).
    CHECK(read_ok(body_kind::other, R"({"model":"e5","input":"a","input":"b"})").model == "e5");
}

TEST_CASE("a prompt without escapes is read where it lies in the body", "[request_view]") {
    const std::string body = R"({"prompt":"plain text","stream":false})";
    const auto v = read_ok(body_kind::completions, body);
    REQUIRE(v.borrowed);
    CHECK(v.borrowed->data() == body.data() + 11);
    const std::string chat = R"({"messages":[{"role":"user","content":"caf\u00e9"}]})";
    CHECK(read_ok(body_kind::chat, chat).prompt() == "<|user|>\ncaf\xc3\xa9\n<|assistant|>\n");
}

TEST_CASE("the router refuses only what it cannot read one way", "[request_view]") {
    CHECK(read_refused(body_kind::completions, "{not json").message.find("not valid JSON") !=
          std::string::npos);
    CHECK(read_refused(body_kind::chat, R"([1,2])").message == "the body must be a JSON object");
    CHECK(read_refused(body_kind::completions, std::string(100, '[') + std::string(100, ']'))
              .message.find("nests deeper than 64") != std::string::npos);
    // The limit counts brackets outside strings only.
    read_ok(body_kind::completions, R"({"prompt":")" + std::string(200, '[') + R"("})");
    const auto twice =
        read_refused(body_kind::completions, R"({"model":"a","prompt":"x","model":"b"})");
    CHECK(twice.param == "model");
    const auto escaped = read_refused(body_kind::completions, R"({"\u006dodel":"a","prompt":"x"})");
    CHECK(escaped.param == "model");
    CHECK(escaped.message.find("escapes") != std::string::npos);
    const auto role = read_refused(
        body_kind::chat, R"({"messages":[{"role":"user","role":"system","content":"x"}]})");
    CHECK(role.param == "messages[0].role");
    read_refused(body_kind::chat, R"({"messages":[],"messages":[]})");
    read_refused(body_kind::responses, R"({"input":"a","input":"b"})");
    // Fields the router does not read may repeat: the engine decides.
    read_ok(body_kind::completions, R"({"prompt":"x","max_tokens":1,"max_tokens":2})");
    read_ok(body_kind::completions, R"({"prompt":"x","messages":1,"messages":2})");
}
