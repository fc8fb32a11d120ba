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
        const char* argv[] = {"prog", "--match-prefill-blocks",
                              "64",   "--miss-prefill-weight",
                              "2",    "--prefix-load-factor",
                              "1.5",  "--kv-weight",
                              "8",    "--prefix-long-match-load-factor",
                              "0.5"};
        CHECK(f.parse(static_cast<int>(std::size(argv)), argv).empty());
        CHECK(o.prefix.match_prefill_blocks == 64);
        CHECK(o.prefix.miss_prefill_weight == 2.0);
        CHECK(o.prefix.load_factor == 1.5);
        CHECK(o.load.kv_weight == 8.0);
        CHECK(o.prefix.long_match_load_factor == 0.5);
        std::vector<std::string> errors;
        check_policy_options(o, errors);
        CHECK(errors.empty());
    }
    SECTION("every knob out of range is named") {
        const char* argv[] = {
            "prog", "--match-prefill-blocks", "-1",  "--min-match-ratio",
            "2",    "--load-factor",          "0.5", "--prefix-long-match-load-factor",
            "-1"};
        CHECK(f.parse(static_cast<int>(std::size(argv)), argv).empty());
        std::vector<std::string> errors;
        check_policy_options(o, errors);
        CHECK(errors == std::vector<std::string>{"--load-factor must be at least 1",
                                                 "--prefix-long-match-load-factor must be in 0..16",
                                                 "--match-prefill-blocks must not be negative",
                                                 "--min-match-ratio must be in 0..1"});
    }
}
