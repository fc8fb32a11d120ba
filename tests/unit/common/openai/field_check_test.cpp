#include "common/openai/field_check.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace lanes::common::openai;

namespace {

std::string refused(endpoint kind, const std::string& body) {
    const auto e = check_read_fields(kind, body);
    return e ? e->param.value_or("?") : "";
}

} // namespace

TEST_CASE("check_read_fields refuses a read field given twice or spelled with escapes",
          "[openai]") {
    const auto completions = endpoint::completions;
    const auto chat = endpoint::chat_completions;
    CHECK(refused(completions, R"({"model":"a","prompt":"x"})").empty());
    CHECK(refused(completions, R"({"model":"a","prompt":"x","model":"b"})") == "model");
    CHECK(refused(completions, R"({"prompt":"x","prompt":[1,2]})") == "prompt");
    CHECK(refused(completions, R"({"prompt":"x","stream":true,"stream":false})") == "stream");
    CHECK(refused(completions, R"({"prompt":"x","user":"a","user":"b"})") == "user");
    CHECK(refused(completions, R"({"mod\u0065l":"b","prompt":"x"})") == "model");
    CHECK(refused(completions, R"({"pr\u006fmpt":"x"})") == "prompt");
    // Fields not read may repeat or be escaped (vLLM takes the last; nobody routes on them).
    CHECK(refused(completions, R"({"prompt":"x","temperature":1,"temperature":0})").empty());
    CHECK(refused(completions, R"({"prompt":"x","t\u0065mperature":1})").empty());
    // messages is a chat field: in a completions body it is just another field.
    CHECK(refused(completions, R"({"prompt":"x","messages":1,"messages":2})").empty());
    CHECK(refused(chat, R"({"messages":[{"role":"user","content":"hi"}],"messages":[]})") ==
          "messages");
    CHECK(refused(chat, R"({"messages":[{"role":"user","content":"hi"}],"tools":[],"tools":[]})") ==
          "tools");
    CHECK(refused(chat,
                  R"({"messages":[{"role":"user","content":"a"},)"
                  R"({"role":"user","role":"system","content":"b"}]})") == "messages[1].role");
    CHECK(refused(chat, R"({"messages":[{"role":"user","cont\u0065nt":"a"}]})") ==
          "messages[0].content");
    CHECK(check_read_fields(chat, R"({"messages":[{"role":"user","content":"a","content":"b"}]})")
              ->message.find("more than once") != std::string::npos);
    // Not JSON, or not an object: left to the parser that follows.
    CHECK(refused(completions, "{").empty());
    CHECK(refused(completions, "[1]").empty());
    CHECK(refused(chat, R"({"messages":[{"role":"user","content":"a"},)").empty());
}
