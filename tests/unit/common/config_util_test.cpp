#include "common/config_util.hpp"

#include <catch2/catch.hpp>

#include <regex>

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
    CHECK((parse_duration("1h", d) && d == 3600000ms));
    CHECK(!parse_duration("fast", d));
    CHECK(!parse_duration("-1s", d));
}

TEST_CASE("booleans take true/false/yes/no/on/off/1/0 in every form", "[config]") {
    bool on = false;
    bool off = true;
    std::int64_t count = 0;
    flag_set f("prog", "test");
    f.add("on", on, "");
    f.add("off", off, "");
    f.add("count", count, "");
    const auto parse = [&](std::vector<const char*> args) {
        args.insert(args.begin(), "prog");
        return f.parse(static_cast<int>(args.size()), args.data());
    };
    const std::pair<const char*, const char*> spellings[] = {
        {"true", "false"}, {"yes", "no"}, {"on", "off"}, {"1", "0"}, {"YES", "Off"}};
    for (const auto& [yes, no] : spellings) {
        INFO(yes << " / " << no);
        on = false;
        off = true;
        const std::string with_on = std::string("--on=") + yes;
        const std::string with_off = std::string("--off=") + no;
        CHECK(parse({with_on.c_str(), with_off.c_str()}).empty());
        CHECK((on && !off));
        on = false;
        off = true;
        // As a separate argument, followed by another flag.
        CHECK(parse({"--on", yes, "--off", no, "--count", "3"}).empty());
        CHECK((on && !off && count == 3));
        CHECK(f.apply("on", no).empty()); // a config file's value
        CHECK(!on);
    }
    SECTION("a bare flag is true, and the next flag is not its value") {
        CHECK(parse({"--on", "--count", "4"}).empty());
        CHECK((on && count == 4));
    }
    SECTION("a wrong value names every spelling") {
        const auto errors = parse({"--on=maybe"});
        REQUIRE(errors.size() == 1);
        CHECK(errors[0] == "--on expects true/false/yes/no/on/off/1/0 (or no value), not 'maybe'");
        CHECK(f.apply("on", "2") ==
              "--on expects true/false/yes/no/on/off/1/0 (or no value), not '2'");
    }
    SECTION("a stray word after a bare boolean says what the flag takes") {
        const auto errors = parse({"--on", "maybe"});
        REQUIRE(errors.size() == 1);
        CHECK(errors[0] == "unexpected argument 'maybe': --on expects "
                           "true/false/yes/no/on/off/1/0 (or no value)");
        CHECK(on);
    }
}

TEST_CASE("an unknown flag close to a known one is named", "[config]") {
    std::string policy;
    std::int64_t count = 0;
    flag_set f("prog", "test");
    f.add("policy", policy, "");
    f.add("count", count, "");
    f.retire("old-knob", "gone");
    SECTION("a slip of one or two letters, with its value") {
        const char* argv[] = {"prog", "--polcy", "prefix", "--cuont=2"};
        const auto errors = f.parse(4, argv);
        REQUIRE(errors.size() == 2); // "prefix" goes with --polcy, not a second complaint
        CHECK(errors[0] == "unknown option --polcy (did you mean --policy?)");
        CHECK(errors[1] == "unknown option --cuont (did you mean --count?)");
    }
    SECTION("from a config file") {
        CHECK(f.apply("policyy", "x") == "unknown option --policyy (did you mean --policy?)");
    }
    SECTION("--help and --version are known too") {
        CHECK(f.apply("verison", "") == "unknown option --verison (did you mean --version?)");
    }
    SECTION("nothing close: no guess, and a value after it is a stray") {
        const char* argv[] = {"prog", "--strategy", "x", "--old-knb"};
        const auto errors = f.parse(4, argv);
        REQUIRE(errors.size() == 3);
        CHECK(errors[0] == "unknown option --strategy");
        CHECK(errors[1] == "unexpected argument 'x'");
        // A retired flag is not suggested.
        CHECK(errors[2] == "unknown option --old-knb");
    }
    SECTION("short names need a closer match") {
        CHECK(f.apply("pol", "") == "unknown option --pol");
    }
}

TEST_CASE("edit_distance counts insertions, deletions, substitutions and swaps", "[config]") {
    CHECK(edit_distance("policy", "policy") == 0);
    CHECK(edit_distance("polcy", "policy") == 1);
    CHECK(edit_distance("poilcy", "policy") == 1); // a swap of neighbours
    CHECK(edit_distance("pollcy", "policy") == 1);
    CHECK(edit_distance("", "abc") == 3);
    CHECK(edit_distance("kitten", "sitting") == 3);
}

TEST_CASE("durations print as people write them, and read back", "[config]") {
    CHECK(format_duration(0ms) == "0s");
    CHECK(format_duration(250ms) == "250ms");
    CHECK(format_duration(1500ms) == "1500ms");
    CHECK(format_duration(1s) == "1s");
    CHECK(format_duration(90s) == "90s");
    CHECK(format_duration(5min) == "5m");
    CHECK(format_duration(30min) == "30m");
    CHECK(format_duration(1h) == "1h");
    CHECK(format_duration(36h) == "36h");
    std::chrono::milliseconds back{};
    for (const auto d : {0ms, 1ms, 999ms, 1000ms, 61000ms, 120000ms, 5400000ms, 7200000ms}) {
        REQUIRE(parse_duration(format_duration(d), back));
        CHECK(back == d);
    }
    CHECK((parse_duration("2h", back) && back == 2h));
    CHECK((parse_duration("0.5h", back) && back == 30min));
}

TEST_CASE("flag_set answers --version and --help, not parsed as flags", "[config]") {
    flag_set f("prog", "test");
    const char* argv[] = {"prog", "--version"};
    CHECK(f.parse(2, argv).empty());
    CHECK(f.version_requested());
    const std::string text = f.requested_text();
    INFO(text);
    // "prog 0.1.0 (git abc1234)", or without the commit outside a git checkout.
    CHECK(std::regex_match(text, std::regex(R"(prog \d+\.\d+\.\d+( \(git [0-9a-f]{7,}\))?\n)")));

    flag_set quiet("prog", "test");
    CHECK(quiet.requested_text().empty());
    const char* help[] = {"prog", "-h"};
    CHECK(quiet.parse(2, help).empty());
    CHECK(quiet.requested_text() == quiet.usage());
}
