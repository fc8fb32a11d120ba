#include "common/prompt/tokenizer.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace lanes::common;

TEST_CASE("encode_prompt prepends BOS and maps each byte to its value", "[tokenizer]") {
    auto ids = encode_prompt("Hi\n");
    REQUIRE(ids == std::vector<token_id>{bos_token, 'H', 'i', '\n'});
    REQUIRE(encode_prompt("") == std::vector<token_id>{bos_token});
}

TEST_CASE("encode_prompt treats bytes as unsigned", "[tokenizer]") {
    std::string text = "\xff\x80";
    text.push_back('\0');
    auto ids = encode_prompt(text);
    REQUIRE(ids == std::vector<token_id>{bos_token, 255, 128, 0});
}

TEST_CASE("decode drops BOS, EOS and out-of-vocabulary ids", "[tokenizer]") {
    std::vector<token_id> ids = {bos_token, 'a', eos_token, 'b', 1000, 'c', vocab_size};
    REQUIRE(decode(ids) == "abc");
    REQUIRE(decode({}) == "");
}

TEST_CASE("decode inverts encode_prompt for any bytes", "[tokenizer]") {
    std::string text;
    for (int b = 0; b < 256; ++b) {
        text.push_back(static_cast<char>(b));
    }
    REQUIRE(decode(encode_prompt(text)) == text);
}

TEST_CASE("is_printable accepts printable ASCII, newline and tab only", "[tokenizer]") {
    REQUIRE(is_printable(' '));
    REQUIRE(is_printable('~'));
    REQUIRE(is_printable('a'));
    REQUIRE(is_printable('\n'));
    REQUIRE(is_printable('\t'));
    REQUIRE_FALSE(is_printable(0x1f));
    REQUIRE_FALSE(is_printable(0x7f));
    REQUIRE_FALSE(is_printable('\r'));
    REQUIRE_FALSE(is_printable(0));
    REQUIRE_FALSE(is_printable(200));
    REQUIRE_FALSE(is_printable(bos_token));
    REQUIRE_FALSE(is_printable(eos_token));
}
