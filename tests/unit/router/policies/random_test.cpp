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
        ++counts[*p.pick({}, pool, {"r2"}).replica];
    CHECK(counts.count(1) == 0);
    CHECK(counts.count(2) == 0);
    CHECK(counts[0] > 800);
    CHECK(counts[3] > 800);
    CHECK(!p.pick({}, pool, {"r0", "r2", "r3"}).replica);
    CHECK(!p.pick({}, make_pool(0), {}).replica);
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
        s1.push_back(*p1.pick({}, pool, {}).replica);
        s2.push_back(*p2.pick({}, pool, {}).replica);
        s3.push_back(*p3.pick({}, pool, {}).replica);
    }
    CHECK(s1 == s2);
    CHECK(s1 != s3);
}

TEST_CASE("uniform_index stays in range and covers it", "[policy][random]") {
    std::mt19937_64 rng(7);
    std::vector<int> seen(3, 0);
    for (int i = 0; i < 3'000; ++i) {
        const std::size_t k = uniform_index(rng, 3);
        REQUIRE(k < 3);
        ++seen[k];
    }
    for (const int n : seen)
        CHECK(n > 850);
    CHECK(uniform_index(rng, 1) == 0);
}
