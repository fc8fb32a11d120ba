#include "common/json_depth.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
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

namespace {

// The obvious byte-at-a-time reading, to hold the vector one against.
bool reference_deeper(std::string_view json, std::size_t max_depth) {
    std::size_t depth = 0;
    bool in_string = false;
    for (std::size_t i = 0; i < json.size(); ++i) {
        const char c = json[i];
        if (in_string) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_depth)
                return true;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return false;
}

} // namespace

TEST_CASE("nesting agrees with a byte-at-a-time reading on random bodies", "[json]") {
    CHECK(nests_deeper_than(R"({"a":"x\\\"]]","b":[[[1]]]})", 3)); // \\ then \" inside
    CHECK_FALSE(nests_deeper_than(R"({"a":"x\\\\"}[[[)", 3));      // two escaped backslashes
    std::uint64_t state = 42;
    auto next = [&state] {
        state = state * 6364136223846793005ULL + 1442695040888963407ULL;
        return static_cast<unsigned>(state >> 33);
    };
    const std::string alphabet = "\"\\[]{}a";
    for (int round = 0; round < 20000; ++round) {
        std::string body(next() % 80, 'a');
        for (auto& c : body)
            c = alphabet[next() % alphabet.size()];
        const std::size_t limit = next() % 6;
        INFO(body << " limit " << limit);
        CHECK(nests_deeper_than(body, limit) == reference_deeper(body, limit));
    }
}

TEST_CASE("measure_json bounds depth and values before any DOM is built", "[json]") {
    using lanes::common::measure_json;
    auto s = measure_json(R"({"a":[1,2,{"b":"x,y[]"}],"c":null})", 64, 100);
    CHECK(s.within);
    CHECK(s.depth == 3);
    // object, a (counted with its array), 1, 2, inner object with b, c: an upper bound of the
    // nodes a DOM makes, never fewer than the containers.
    CHECK(s.values >= 4);
    CHECK(s.values <= 10);
    CHECK(measure_json("[[[[]]]]", 3, 100).within == false);
    CHECK(measure_json("[[[[]]]]", 4, 100).within);
    std::string many = "[";
    for (int i = 0; i < 1000; ++i)
        many += "[],";
    many += "1]";
    CHECK(measure_json(many, 64, 2000).within);
    CHECK_FALSE(measure_json(many, 64, 500).within);
    std::string numbers = "[";
    for (int i = 0; i < 1000; ++i)
        numbers += "7,";
    numbers += "7]";
    const auto n = measure_json(numbers, 64, 5000);
    CHECK(n.values >= 1001);
    CHECK(n.values <= 1002);
    // Brackets and commas inside strings count for nothing; an escaped quote does not end one.
    CHECK(measure_json(R"(["[,[,\"[,[", 1])", 2, 3).within);
}
