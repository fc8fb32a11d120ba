#include "router/policies/draws.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace lanes::router;

TEST_CASE("a decision's draws stay in range and cover it evenly", "[policy][random]") {
    seeded_draws draws(7);
    std::vector<int> seen(3, 0);
    for (int i = 0; i < 3'000; ++i) {
        auto d = draws.for_decision();
        const std::size_t k = d.below(3);
        REQUIRE(k < 3);
        ++seen[k];
        draws.advance();
    }
    for (const int n : seen) // 1,000 expected each; 850 is over 5 standard deviations below
        CHECK(n > 850);
    CHECK(draws.for_decision().below(1) == 0);
}

TEST_CASE("draws repeat until a decision is recorded, then move on", "[policy][random]") {
    seeded_draws draws(42);
    auto first = draws.for_decision();
    auto again = draws.for_decision();
    const std::vector<std::uint64_t> a{first.next(), first.next(), first.next()};
    const std::vector<std::uint64_t> b{again.next(), again.next(), again.next()};
    CHECK(a == b); // a peek sees what the pick will
    CHECK(a[0] != a[1]);
    draws.advance();
    auto next = draws.for_decision();
    CHECK(next.next() != a[0]);

    seeded_draws other(43); // another seed, other draws
    CHECK(other.for_decision().next() != a[0]);
}
