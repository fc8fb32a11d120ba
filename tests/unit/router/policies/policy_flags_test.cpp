#include "router/policies/policy_flags.hpp"

#include <catch2/catch.hpp>

#include <iterator>

using namespace lanes;
using namespace lanes::router;

TEST_CASE("policy flags: one declaration sets every knob and checks its range", "[config]") {
    policy_options o;
    common::flag_set f("prog", "test");
    add_policy_flags(f, o);
    SECTION("values reach the knobs") {
        const char* argv[] = {"prog", "--prefix-load-factor",      "1.75", "--kv-weight",
                              "8",    "--prefix-recompute-weight", "4"};
        CHECK(f.parse(static_cast<int>(std::size(argv)), argv).empty());
        CHECK(o.prefix.load_factor == 1.75);
        CHECK(o.load.kv_weight == 8.0);
        CHECK(o.prefix.recompute_weight == 4.0);
        std::vector<std::string> errors;
        check_policy_options(o, errors);
        CHECK(errors.empty());
    }
    SECTION("every knob out of range is named") {
        const char* argv[] = {"prog", "--load-factor", "0.5", "--prefix-recompute-weight", "0.5"};
        CHECK(f.parse(static_cast<int>(std::size(argv)), argv).empty());
        std::vector<std::string> errors;
        check_policy_options(o, errors);
        CHECK(errors == std::vector<std::string>{"--load-factor must be at least 1",
                                                 "--prefix-recompute-weight must be in 1..1000"});
    }
}

TEST_CASE("policy flags: a retired threshold is refused, naming what replaced it", "[config]") {
    policy_options o;
    common::flag_set f("prog", "test");
    add_policy_flags(f, o);
    const char* argv[] = {
        "prog", "--balance-abs-threshold", "64", "--min-match-ratio=0.3", "--prefix-load-factor",
        "2"};
    const auto errors = f.parse(static_cast<int>(std::size(argv)), argv);
    REQUIRE(errors.size() == 2);
    CHECK(errors[0].starts_with("--balance-abs-threshold was retired: prefix routes on each "
                                "replica's estimated time to first token"));
    CHECK(errors[0].find("--prefix-load-factor") != std::string::npos);
    CHECK(errors[1].starts_with("--min-match-ratio was retired"));
    CHECK(o.prefix.load_factor == 2.0); // the value after the retired one was still read
    for (const char* name : {"balance-rel-threshold", "miss-prefill-weight", "match-prefill-blocks",
                             "prefix-long-match-load-factor"}) {
        INFO(name);
        CHECK(f.apply(name, "1").find("was retired") != std::string::npos);
        CHECK(f.usage().find(std::string("--") + name) == std::string::npos);
    }
}
