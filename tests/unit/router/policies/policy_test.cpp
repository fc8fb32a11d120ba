#include "router/policies/policy.hpp"

#include "tests/unit/router/policies/fake_pool.hpp"

#include <catch2/catch.hpp>

using namespace lanes::router;
using namespace lanes::router::test;

TEST_CASE("eligible_indices keeps routable, untried replicas in order", "[policy]") {
    auto pool = make_pool(5);
    pool.replicas[1].routable = false;
    CHECK(eligible_indices(pool, {"r3"}) == std::vector<std::size_t>{0, 2, 4});
    CHECK(eligible_indices(pool, {}) == std::vector<std::size_t>{0, 2, 3, 4});
    CHECK(eligible_indices(make_pool(0), {}).empty());
}
