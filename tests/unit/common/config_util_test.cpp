#include "common/config_util.hpp"

#include <catch2/catch.hpp>

using namespace lanes::common;
using namespace std::chrono_literals;

TEST_CASE("flag_set parses every kind of flag and reports all problems at once", "[config]") {
    std::string name = "x";
    std::int64_t count = 1;
    unsigned short port = 80;
    double ratio = 0.5;
    bool verbose = false;
    std::chrono::milliseconds timeout = 1s;
    std::vector<std::string> items;
    flag_set f("prog", "test");
    f.add("name", name, "");
    f.add("count", count, "");
    f.add("port", port, "");
    f.add("ratio", ratio, "");
    f.add("verbose", verbose, "");
    f.add("timeout", timeout, "");
    f.add("item", items, "");

    SECTION("good flags") {
        const char* argv[] = {"prog",  "--name",  "abc",  "--count=7", "--port",
                              "8080",  "--ratio", "1.25", "--verbose", "--timeout",
                              "250ms", "--item",  "a",    "--item=b"};
        const auto errors = f.parse(static_cast<int>(std::size(argv)), argv);
        CHECK(errors.empty());
        CHECK(name == "abc");
        CHECK(count == 7);
        CHECK(port == 8080);
        CHECK(ratio == 1.25);
        CHECK(verbose);
        CHECK(timeout == 250ms);
        CHECK(items == std::vector<std::string>{"a", "b"});
    }
    SECTION("all errors listed") {
        const char* argv[] = {"prog", "--count",   "seven", "--port", "70000", "--bogus",
                              "1",    "--timeout", "-3s",   "stray",  "--name"};
        const auto errors = f.parse(static_cast<int>(std::size(argv)), argv);
        CHECK(errors.size() == 7); // "1" after the unknown --bogus is a stray argument too
    }
    SECTION("help") {
        const char* argv[] = {"prog", "--help"};
        CHECK(f.parse(2, argv).empty());
        CHECK(f.help_requested());
        CHECK(f.usage().find("--timeout") != std::string::npos);
    }
}

TEST_CASE("parse_duration understands units", "[config]") {
    std::chrono::milliseconds d{};
    CHECK((parse_duration("2s", d) && d == 2000ms));
    CHECK((parse_duration("1.5s", d) && d == 1500ms));
    CHECK((parse_duration("1m", d) && d == 60000ms));
    CHECK((parse_duration("100", d) && d == 100ms));
    CHECK((parse_duration("100ms", d) && d == 100ms));
    CHECK(!parse_duration("fast", d));
    CHECK(!parse_duration("-1s", d));
}
