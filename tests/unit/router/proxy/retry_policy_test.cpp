// --retry-on: which failure classes go to another replica, by name, and the default that retries
// only what cannot still be running anywhere.
#include "router/proxy/retry_policy.hpp"

#include <catch2/catch.hpp>

using namespace lanes::router;

TEST_CASE("retry policy: the default retries only what cannot have run", "[retry]") {
    const retry_policy d;
    CHECK(d.allows(failure_class::connect));
    CHECK(d.allows(failure_class::reset));
    CHECK(d.allows(failure_class::backpressure));
    CHECK_FALSE(d.allows(failure_class::status_5xx));
    CHECK_FALSE(d.allows(failure_class::timeout));
    CHECK_FALSE(d.allows(failure_class::broken));
    CHECK_FALSE(d.allows(failure_class::none));
    const auto parsed = retry_policy::parse(retry_policy::default_names);
    REQUIRE(parsed);
    for (auto c : {failure_class::connect, failure_class::reset, failure_class::backpressure,
                   failure_class::status_5xx, failure_class::timeout, failure_class::broken})
        CHECK(parsed->allows(c) == d.allows(c));
}

TEST_CASE("retry policy: names, none, and unknown names refused", "[retry]") {
    const auto all = retry_policy::parse("connect-failure, reset,backpressure,5xx,timeout,"
                                         "broken-answer");
    REQUIRE(all);
    for (auto c : {failure_class::connect, failure_class::reset, failure_class::backpressure,
                   failure_class::status_5xx, failure_class::timeout, failure_class::broken})
        CHECK(all->allows(c));
    const auto none = retry_policy::parse("none");
    REQUIRE(none);
    CHECK_FALSE(none->allows(failure_class::connect));
    const auto only = retry_policy::parse("5xx");
    REQUIRE(only);
    CHECK(only->allows(failure_class::status_5xx));
    CHECK_FALSE(only->allows(failure_class::connect));
    std::string why;
    CHECK_FALSE(retry_policy::parse("reset,http_500", &why));
    CHECK(why.find("http_500") != std::string::npos);
    CHECK(why.find("broken-answer") != std::string::npos); // the known names are listed
    CHECK(to_string(failure_class::status_5xx) == "5xx");
}
