#include "common/json_depth.hpp"

#include <catch2/catch.hpp>

#include <string>

using lanes::common::nests_deeper_than;

TEST_CASE("nesting is counted outside strings only", "[json]") {
    CHECK_FALSE(nests_deeper_than(R"({"a":[1,{"b":2}]})", 3));
    CHECK(nests_deeper_than(R"({"a":[1,{"b":2}]})", 2));
    CHECK_FALSE(nests_deeper_than(R"({"a":"[[[[{{{{"})", 1));
    CHECK_FALSE(nests_deeper_than(R"({"a":"\"[[[[\\"})", 1)); // escapes, and an escaped backslash
    CHECK(nests_deeper_than(R"({"a":"\\",  "b":[[1]]})", 2));
    CHECK_FALSE(nests_deeper_than("", 0));
    CHECK_FALSE(nests_deeper_than("42", 0));
    // Long inputs cross the 16-byte steps: brackets at every offset are still seen.
    for (std::size_t pad = 0; pad < 40; ++pad) {
        const std::string body =
            std::string(pad, ' ') + std::string(65, '[') + std::string(65, ']');
        CHECK(nests_deeper_than(body, 64));
        CHECK_FALSE(nests_deeper_than(body, 65));
        const std::string in_string = "\"" + std::string(pad, 'x') + std::string(100, '[') + "\"";
        CHECK_FALSE(nests_deeper_than(in_string, 0));
    }
    // 8 MiB of '[' stops at the limit.
    CHECK(nests_deeper_than(std::string(8 << 20, '['), 64));
}
