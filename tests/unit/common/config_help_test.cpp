#include "common/config_util.hpp"
#include "tests/unit/common/help_text.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <sstream>

using namespace lanes::common;
using namespace std::chrono_literals;

using lanes::test::lines_of;

TEST_CASE("wrap_text keeps every line within the width, continuations indented", "[config]") {
    const std::string text = "the quick brown fox jumps over the lazy dog, again and again, until "
                             "the dog wakes up and the fox runs off into the woods";
    const std::string wrapped = wrap_text(text, 40, 10, 10);
    const auto lines = lines_of(wrapped);
    REQUIRE(lines.size() > 2);
    for (std::size_t i = 0; i < lines.size(); ++i) {
        INFO(lines[i]);
        CHECK(lines[i].size() + (i == 0 ? 10 : 0) <= 40);
        if (i > 0)
            CHECK((lines[i].starts_with("          ") && lines[i][10] != ' '));
    }
    // Nothing lost, nothing added but line breaks and indents.
    std::string rejoined;
    std::istringstream words(wrapped);
    for (std::string w; words >> w;)
        rejoined += (rejoined.empty() ? "" : " ") + w;
    CHECK(rejoined == text);
    CHECK(wrap_text("", 40, 4, 4) == "\n");
}

TEST_CASE("flag_set --help: sections, typed placeholders, choices, defaults, 100 columns",
          "[config]") {
    std::string host = "0.0.0.0", file, level = "info";
    unsigned short port = 8000;
    std::int64_t threads = 0;
    std::size_t limit = 1024;
    double factor = 1.25;
    bool verbose = false;
    std::chrono::milliseconds ttl = 30min, poll = 250ms;
    std::vector<std::string> replicas;
    flag_set f("prog",
               "A program whose summary is long enough to need wrapping when it is printed, "
               "since it goes on and on about what the program does.");
    f.section("Listening");
    f.add("host", host, "address to listen on").value_name("HOST");
    f.add("port", port, "port");
    f.section("Routing");
    f.add("level", level, "how loud").value_name("LEVEL").choices({"debug", "info"});
    f.add("replica", replicas, "a replica").value_name("URL");
    f.add("factor", factor, "a factor");
    f.section("Listening"); // named again: adds to the first
    f.add("threads", threads, "threads");
    f.section("Limits");
    f.add("body-limit", limit, "largest body").value_name("BYTES");
    f.add("session-ttl", ttl,
          "idle time before a session is forgotten, said at such length that "
          "it cannot fit one line of the help however wide the terminal is");
    f.add("poll", poll, "");
    f.add("verbose", verbose, "say more");
    f.add("a-flag-with-a-very-long-name-indeed", file, "its help starts on a line of its own")
        .value_name("PATH");
    f.retire("gone", "replaced");

    const std::string usage = f.usage();
    INFO(usage);
    const auto lines = lines_of(usage);
    for (const auto& line : lines) {
        INFO(line);
        CHECK(line.size() <= flag_set::usage_width);
    }
    const auto at = [&](std::string_view needle) { return usage.find(needle); };
    // Sections in the order first named; --help and --version under General, last.
    REQUIRE(at("\nListening:\n") != std::string::npos);
    CHECK(at("\nListening:\n") < at("\nRouting:\n"));
    CHECK(at("\nRouting:\n") < at("\nLimits:\n"));
    CHECK(at("\nLimits:\n") < at("\nGeneral:\n"));
    CHECK(at("--threads") < at("\nRouting:\n"));
    CHECK(at("--help, -h") > at("\nGeneral:\n"));
    CHECK(at("--version") > at("\nGeneral:\n"));
    CHECK(at("Other options") == std::string::npos);
    CHECK(at("--gone") == std::string::npos);
    // Placeholders from the type, or as declared.
    CHECK(at("  --host HOST ") != std::string::npos);
    CHECK(at("  --port PORT ") != std::string::npos);
    CHECK(at("  --threads COUNT ") != std::string::npos);
    CHECK(at("  --factor NUMBER ") != std::string::npos);
    CHECK(at("  --body-limit BYTES ") != std::string::npos);
    CHECK(at("  --session-ttl DURATION ") != std::string::npos);
    CHECK(at("  --verbose[=BOOL] ") != std::string::npos);
    CHECK(at("  --replica URL ") != std::string::npos);
    for (const auto& line : lines)
        CHECK(!(line.starts_with("  --") && line.find(" VALUE") != std::string::npos));
    // Choices, repeatable, defaults as people write them.
    CHECK(at("how loud (one of: debug, info; default: info)") != std::string::npos);
    CHECK(at("a replica (repeatable)") != std::string::npos);
    CHECK(at("(default: 30m)") != std::string::npos);
    CHECK(at("(default: 250ms)") != std::string::npos);
    CHECK(at("(default: 1.25)") != std::string::npos);
    CHECK(at("(default: false)") != std::string::npos);
    // The header says how values are written.
    CHECK(at("true/false, yes/no, on/off or 1/0") != std::string::npos);
    CHECK(at("a bare number is milliseconds") != std::string::npos);
    // A long label puts its help on the next line, at the same column as the others.
    const auto label = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
        return l.starts_with("  --a-flag-with-a-very-long-name-indeed PATH");
    });
    REQUIRE(label != lines.end());
    REQUIRE(label + 1 != lines.end());
    const auto host_line = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
        return l.starts_with("  --host HOST");
    });
    REQUIRE(host_line != lines.end());
    const std::size_t column = host_line->find("address to listen on");
    CHECK((label + 1)->find_first_not_of(' ') == column);
    // "default:" and its value stay on one line.
    for (const auto& line : lines)
        CHECK(!line.ends_with("(default:"));
}

TEST_CASE("flag_set --help-markdown: a table a section of flag, default and meaning", "[config]") {
    std::string policy = "prefix";
    std::chrono::milliseconds ttl = 5min;
    bool on = true;
    flag_set f("prog", "test");
    f.section("Routing");
    f.add("policy", policy, "routing policy, a|b").value_name("NAME").choices({"a", "prefix"});
    f.section("Timeouts");
    f.add("ttl", ttl, "how long");
    f.add("on", on, "switch");
    const char* argv[] = {"prog", "--help-markdown"};
    CHECK(f.parse(2, argv).empty());
    const std::string md = f.requested_text();
    INFO(md);
    CHECK(md == f.usage_markdown());
    CHECK(md.find("### Routing\n\n| Flag | Default | Meaning |\n|---|---|---|\n") !=
          std::string::npos);
    CHECK(md.find("| `--policy NAME` | `prefix` | routing policy, a\\|b (one of: a, prefix) |") !=
          std::string::npos);
    CHECK(md.find("| `--ttl DURATION` | `5m` | how long |") != std::string::npos);
    CHECK(md.find("| `--on[=BOOL]` | `true` | switch |") != std::string::npos);
    CHECK(md.find("### General") != std::string::npos);
    CHECK(md.find("| `--version` |  | print the version and exit |") != std::string::npos);
    // Hidden: --help does not list it.
    CHECK(f.usage().find("help-markdown") == std::string::npos);
}

TEST_CASE("flag_set --help of flags in no section: one list, --help and --version last",
          "[config]") {
    std::int64_t n = 1;
    flag_set f("prog", "test");
    f.add("n", n, "a number");
    const std::string usage = f.usage();
    INFO(usage);
    CHECK(usage.find("\nOptions:\n  --n COUNT") != std::string::npos);
    CHECK(usage.find("General") == std::string::npos);
    CHECK(usage.find("--version") > usage.find("--n COUNT"));
    // No duration or boolean flag: the header does not explain them.
    CHECK(usage.find("DURATION") == std::string::npos);
    CHECK(usage.find("BOOL") == std::string::npos);
}
