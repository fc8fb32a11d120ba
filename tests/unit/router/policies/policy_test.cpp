#include "router/policies/policy.hpp"

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
        CHECK(p->pick({}, pool, {}).replica);
        CHECK(!p->pick({}, pool, {"r0", "r1"}).replica);
    }
}

TEST_CASE("eligible_indices keeps routable, untried replicas in order", "[policy]") {
    auto pool = make_pool(5);
    pool.replicas[1].routable = false;
    CHECK(eligible_indices(pool, {"r3"}) == std::vector<std::size_t>{0, 2, 4});
    CHECK(eligible_indices(pool, {}) == std::vector<std::size_t>{0, 2, 3, 4});
    CHECK(eligible_indices(make_pool(0), {}).empty());
}
