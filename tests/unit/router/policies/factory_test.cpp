#include "router/policies/factory.hpp"

#include "tests/unit/router/policies/fake_pool.hpp"

#include <catch2/catch.hpp>

using namespace lanes::router;
using namespace lanes::router::test;

TEST_CASE("the factory builds every policy by name", "[policy]") {
    const std::vector<std::string> expected = {"round_robin", "random", "least_loaded",
                                               "session",     "prefix", "kv_aware"};
    CHECK(policy_names() == expected);
    const auto pool = make_pool(2);
    for (const auto& name : expected) {
        INFO(name);
        auto p = make_policy(name, {});
        REQUIRE(p);
        CHECK(p->name() == name);
        p->on_replicas_changed(pool);
        CHECK(p->pick({}, pool, {}).replica);
        CHECK(!p->pick({}, pool, {"r0", "r1"}).replica);
    }
}

TEST_CASE("the factory refuses an unknown name", "[policy]") {
    CHECK(make_policy("no_such_policy", {}) == nullptr);
    CHECK(make_policy("", {}) == nullptr);
    CHECK(make_policy("Prefix", {}) == nullptr); // names are exact
}
