#include "router/policies/round_robin.hpp"

#include "tests/unit/router/policies/fake_pool.hpp"

#include <catch2/catch.hpp>

#include <map>

using namespace lanes::router;
using namespace lanes::router::test;

TEST_CASE("round_robin cycles over routable replicas and skips tried ones", "[policy]") {
    round_robin_policy rr;
    auto pool = make_pool(3);
    std::map<std::size_t, int> counts;
    for (int i = 0; i < 300; ++i) {
        const auto d = route(rr, {}, pool, {});
        REQUIRE(d.replica);
        ++counts[*d.replica];
        CHECK(d.reason == route_reason::round_robin);
    }
    CHECK(counts == std::map<std::size_t, int>{{0, 100}, {1, 100}, {2, 100}});

    pool.replicas[1].routable = false;
    for (int i = 0; i < 10; ++i)
        CHECK(*route(rr, {}, pool, {}).replica != 1);
    CHECK(*route(rr, {}, pool, {"r0"}).replica == 2);
    CHECK(!route(rr, {}, pool, {"r0", "r2"}).replica);
    CHECK(!route(rr, {}, make_pool(0), {}).replica);
}
