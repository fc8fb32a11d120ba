// The routing vocabulary: which replicas a choice may take.
#include "router/routing.hpp"

#include "router/policies/factory.hpp"
#include "tests/unit/router/policies/fake_pool.hpp"

#include <catch2/catch.hpp>

#include <array>

using namespace lanes::router;
using namespace lanes::router::test;

TEST_CASE("eligible_indices keeps routable, untried replicas in order", "[policy]") {
    auto pool = make_pool(5);
    pool.replicas[1].routable = false;
    const route_request any;
    CHECK(eligible_indices(pool, any, {"r3"}) == std::vector<std::size_t>{0, 2, 4});
    CHECK(eligible_indices(pool, any, {}) == std::vector<std::size_t>{0, 2, 3, 4});
    CHECK(eligible_indices(make_pool(0), any, {}).empty());
}

TEST_CASE("eligible_indices keeps only the replicas serving the request's model", "[policy]") {
    const auto pool = make_pool(4);
    const std::array<char, 4> serves{1, 0, 1, 0};
    route_request req;
    req.serves = serves;
    CHECK(eligible_indices(pool, req, {}) == std::vector<std::size_t>{0, 2});
    CHECK(eligible_indices(pool, req, {"r0"}) == std::vector<std::size_t>{2});
    for (const auto& name : policy_names()) { // every policy keeps to them
        INFO(name);
        auto p = make_policy(name, {});
        for (int i = 0; i < 20; ++i) {
            const auto d = p->pick(req, pool, {});
            REQUIRE(d.replica);
            CHECK((*d.replica == 0 || *d.replica == 2));
        }
    }
}
