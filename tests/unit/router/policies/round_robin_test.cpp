#include "router/policies/round_robin.hpp"

#include <catch2/catch.hpp>

#include <map>

using namespace lanes::router;

namespace {
pool_snapshot make_pool(int n) {
    pool_snapshot p;
    for (int i = 0; i < n; ++i)
        p.replicas.push_back({.id = "r" + std::to_string(i)});
    return p;
}
} // namespace

TEST_CASE("round_robin cycles over routable replicas and skips tried ones", "[policy]") {
    round_robin_policy rr;
    auto pool = make_pool(3);
    std::map<std::size_t, int> counts;
    for (int i = 0; i < 300; ++i) {
        const auto d = rr.pick({}, pool, {});
        REQUIRE(d.replica);
        ++counts[*d.replica];
        CHECK(d.reason == route_reason::round_robin);
    }
    CHECK(counts == std::map<std::size_t, int>{{0, 100}, {1, 100}, {2, 100}});

    pool.replicas[1].routable = false;
    for (int i = 0; i < 10; ++i)
        CHECK(*rr.pick({}, pool, {}).replica != 1);
    CHECK(*rr.pick({}, pool, {"r0"}).replica == 2);
    CHECK(!rr.pick({}, pool, {"r0", "r2"}).replica);
    CHECK(!rr.pick({}, make_pool(0), {}).replica);
}

TEST_CASE("the policy factory knows its names and refuses others", "[policy]") {
    for (const auto& name : policy_names()) {
        auto p = make_policy(name, {});
        REQUIRE(p);
        CHECK(p->name() == name);
    }
    CHECK(make_policy("no_such_policy", {}) == nullptr);
}
