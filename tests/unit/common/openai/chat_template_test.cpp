#include "common/openai/chat_template.hpp"

#include <catch2/catch.hpp>

using namespace lanes::common;

TEST_CASE("render_chat of no messages is the generation prompt", "[chat_template]") {
    REQUIRE(render_chat(std::vector<chat_message>{}) == "<|assistant|>\n");
}

TEST_CASE("render_chat renders each turn and appends the generation prompt", "[chat_template]") {
    std::vector<chat_message> messages = {{"system", "Be brief."}, {"user", "Hello"}};
    REQUIRE(render_chat(messages) == "<|system|>\nBe brief.\n<|user|>\nHello\n<|assistant|>\n");
}

TEST_CASE("render_chat keeps empty and multi-line content verbatim", "[chat_template]") {
    std::vector<chat_message> messages = {{"user", ""}, {"tool", "a\nb"}};
    REQUIRE(render_chat(messages) == "<|user|>\n\n<|tool|>\na\nb\n<|assistant|>\n");
}

TEST_CASE("a conversation's rendering minus the generation prompt prefixes its continuation",
          "[chat_template]") {
    std::vector<chat_message> turns = {{"user", "What is 2+2?"}};
    std::string first = render_chat(turns);
    turns.push_back({"assistant", "4"});
    turns.push_back({"user", "And 3+3?"});
    std::string second = render_chat(turns);
    // The first rendering ends with the generation prompt, which the assistant turn continues.
    REQUIRE(second.starts_with(first));
    REQUIRE(second == "<|user|>\nWhat is 2+2?\n<|assistant|>\n4\n<|user|>\nAnd 3+3?\n"
                      "<|assistant|>\n");
}
