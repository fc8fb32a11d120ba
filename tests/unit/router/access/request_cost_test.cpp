// The output a request asks for: the largest of its spellings and repeats.
#include "router/access/request_cost.hpp"

#include "router/access/cache_salt.hpp"
#include "router/request/body_reading.hpp"
#include "router/request/request_view.hpp"

#include <catch2/catch.hpp>

#include <string>

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

TEST_CASE("the readers of a body give back what a big one grew", "[access]") {
    // 8 MiB of "[]," in a field nobody reads: every reader's parser sizes its index to the body,
    // and none keeps it once the body is read.
    std::string big = R"({"max_tokens":9,"junk":[)";
    while (big.size() < (8u << 20))
        big += "[],";
    big += "[]]}";
    CHECK(requested_output_tokens(big) == 9);
    CHECK(lanes::router::body_reading::kept_bytes() <= 2 * lanes::router::kept_read_buffer_bytes);
    CHECK(lanes::router::has_field(big, "junk"));
    CHECK(lanes::router::body_reading::kept_bytes() <= 2 * lanes::router::kept_read_buffer_bytes);
    CHECK(lanes::router::requested_priority(big + " ") == std::nullopt);
    CHECK(lanes::router::body_reading::kept_bytes() <= 2 * lanes::router::kept_read_buffer_bytes);
    // A small one keeps its buffers (no allocation per request): the padded copy outlives the
    // reading, and the next small body reuses what is kept.
    CHECK(requested_output_tokens(R"({"max_tokens":3})") == 3);
    const std::size_t kept = lanes::router::body_reading::kept_bytes();
    CHECK(kept > simdjson::SIMDJSON_PADDING);
    CHECK(requested_output_tokens(R"({"max_tokens":4})") == 4);
    CHECK(lanes::router::body_reading::kept_bytes() == kept);
}
