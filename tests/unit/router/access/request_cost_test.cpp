// The output a request asks for: the largest of its spellings and repeats.
#include "router/access/request_cost.hpp"

#include <catch2/catch.hpp>

using lanes::router::requested_output_tokens;

TEST_CASE("requested output tokens: every spelling, every repeat, escaped names too", "[access]") {
    CHECK(requested_output_tokens(R"({"prompt":"x","max_tokens":16})") == 16);
    CHECK(requested_output_tokens(R"({"max_completion_tokens":300})") == 300);
    CHECK(requested_output_tokens(R"({"max_output_tokens":7,"max_tokens":5})") == 7);
    // A repeat the engine would read last is not a way to ask for less here.
    CHECK(requested_output_tokens(R"({"max_tokens":1,"max_tokens":100000})") == 100000);
    CHECK(requested_output_tokens(R"({"max\u005ftokens":4096})") == 4096);
    CHECK(requested_output_tokens(R"({"nested":{"max_tokens":99}})") == 0);
    CHECK(requested_output_tokens(R"({"max_tokens":"many"})") == 0);
    CHECK(requested_output_tokens(R"({"max_tokens":-3})") == 0);
    CHECK(requested_output_tokens("[1,2]") == 0);
    CHECK(requested_output_tokens("not json") == 0);
    CHECK(requested_output_tokens("") == 0);
}
