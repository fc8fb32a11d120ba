// Load arithmetic beyond least_loaded_test's: scores with part of a scrape, the cap floor, the
// candidates a cap is taken over, and the cap's boundary.
#include "router/policies/load.hpp"

#include "tests/unit/router/policies/fake_pool.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

using namespace lanes::router;
using namespace lanes::router::test;

TEST_CASE("load knobs default to a KV weight of 4 and a cap floor of 8", "[policy][load]") {
    const load_knobs k;
    CHECK(k.kv_weight == 4.0);
    CHECK(k.cap_floor == 8);
}

TEST_CASE("load score with part of a scrape counts what is there", "[policy][load]") {
    replica_view r{.id = "r0", .inflight = 1};
    CHECK(load_score(r, 4.0) == 1.0); // nothing scraped
    r.kv_usage = 0.25;
    CHECK(load_score(r, 4.0) == 2.0); // 1 + 4 * 0.25, no waiting
    CHECK(load_score(r, 0.0) == 1.0); // a zero weight ignores the cache
    r.kv_usage.reset();
    r.waiting = 3;
    CHECK(load_score(r, 4.0) == 4.0); // 1 + 3, no KV usage
    r.kv_usage = 1.0;
    CHECK(load_score(r, 2.5) == 6.5); // a full cache counts kv_weight requests
    r.running = 50;                   // running requests are not in the score
    r.num_blocks = 8;
    CHECK(load_score(r, 2.5) == 6.5);
    r.inflight = 0;
    r.waiting = 0;
    r.kv_usage = 0.0;
    CHECK(load_score(r, 4.0) == 0.0);
}

TEST_CASE("the cap floor binds at low load and not above it", "[policy][load]") {
    auto pool = make_pool(4);
    const std::vector<std::size_t> all = {0, 1, 2, 3};
    CHECK(load_cap(pool, all, 1.25, 4) == 4); // ceil(1.25 / 4) = 1, raised to the floor
    CHECK(load_cap(pool, all, 1.25, 0) == 1);
    for (auto& r : pool.replicas)
        r.inflight = 2; // 1.25 * 9 / 4 = 2.81 -> 3: still the floor
    CHECK(load_cap(pool, all, 1.25, 4) == 4);
    for (auto& r : pool.replicas)
        r.inflight = 10; // 1.25 * 41 / 4 = 12.81 -> 13: above the floor
    CHECK(load_cap(pool, all, 1.25, 4) == 13);
    CHECK(load_cap(pool, all, 1.25, 13) == 13);
    CHECK(load_cap(pool, all, 1.25, 14) == 14);
    // No candidates: no cap, whatever the floor (nothing is within it).
    CHECK(load_cap(pool, std::vector<std::size_t>{}, 1.25, 4) == 0);
}

TEST_CASE("the cap is taken over the candidates only, negative counts as zero", "[policy][load]") {
    auto pool = make_pool(4);
    pool.replicas[3].inflight = 100; // not a candidate: not counted
    const std::vector<std::size_t> two = {0, 1};
    CHECK(load_cap(pool, two, 1.0) == 1); // (0 + 1) / 2 = 0.5 -> 1
    pool.replicas[1].inflight = 5;
    CHECK(load_cap(pool, two, 1.0) == 3); // (5 + 1) / 2
    CHECK(load_cap(pool, std::vector<std::size_t>{3}, 1.0) == 101);
    // A count gone below zero (a release without a pick) adds nothing rather than lowering
    // the cap of the others.
    pool.replicas[0].inflight = -5;
    CHECK(load_cap(pool, two, 1.0) == 3);
    CHECK(load_cap(pool, std::vector<std::size_t>{0}, 2.0) == 2); // 2 * (0 + 1)
}

TEST_CASE("within_cap takes one more request up to the cap exactly", "[policy][load]") {
    replica_view r{.id = "r0", .inflight = 3};
    CHECK(within_cap(r, 5));
    CHECK(within_cap(r, 4)); // 3 + 1 <= 4
    CHECK_FALSE(within_cap(r, 3));
    r.inflight = 0;
    CHECK(within_cap(r, 1));
    CHECK_FALSE(within_cap(r, 0)); // the cap of no candidates admits nobody
    // Scraped load does not count: the cap is on the router's own count.
    r.waiting = 100;
    r.kv_usage = 1.0;
    CHECK(within_cap(r, 1));
}
