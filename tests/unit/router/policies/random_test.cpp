#include "router/policies/random.hpp"

#include "tests/unit/router/policies/fake_pool.hpp"

#include <catch2/catch.hpp>

using namespace lanes::router;
using namespace lanes::router::test;

TEST_CASE("random spreads evenly over the replicas", "[policy][random]") {
    random_policy p({});
    check_even_spread(p, route_reason::random);
}

TEST_CASE("random never picks a non-routable or tried replica", "[policy][random]") {
    random_policy p({});
    auto pool = make_pool(4);
    pool.replicas[1].routable = false;
    std::map<std::size_t, int> counts;
    for (int i = 0; i < 2'000; ++i)
        ++counts[*route(p, {}, pool, {"r2"}).replica];
    CHECK(counts.count(1) == 0);
    CHECK(counts.count(2) == 0);
    CHECK(counts[0] > 800);
    CHECK(counts[3] > 800);
    CHECK(!route(p, {}, pool, {"r0", "r2", "r3"}).replica);
    CHECK(!route(p, {}, make_pool(0), {}).replica);
}

TEST_CASE("random is reproducible from its seed", "[policy][random]") {
    const auto pool = make_pool(8);
    policy_options a;
    policy_options b;
    b.seed = a.seed + 1;
    random_policy p1(a);
    random_policy p2(a);
    random_policy p3(b);
    std::vector<std::size_t> s1;
    std::vector<std::size_t> s2;
    std::vector<std::size_t> s3;
    for (int i = 0; i < 64; ++i) {
        s1.push_back(*route(p1, {}, pool, {}).replica);
        s2.push_back(*route(p2, {}, pool, {}).replica);
        s3.push_back(*route(p3, {}, pool, {}).replica);
    }
    CHECK(s1 == s2);
    CHECK(s1 != s3);
}
