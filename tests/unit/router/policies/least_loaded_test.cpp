#include "router/policies/least_loaded.hpp"

#include "router/policies/load.hpp"
#include "tests/unit/router/policies/fake_pool.hpp"

#include <catch2/catch.hpp>

#include <algorithm>

using namespace lanes::router;
using namespace lanes::router::test;

TEST_CASE("load score counts inflight, waiting and KV usage, and stale scrapes count inflight only",
          "[policy][load]") {
    replica_view r{.id = "r0", .inflight = 3, .kv_usage = 0.5, .waiting = 2};
    CHECK(load_score(r, 4.0) == Approx(7.0));
    CHECK(load_score(r, 10.0) == Approx(10.0));
    r.kv_usage.reset();
    r.waiting.reset();
    CHECK(load_score(r, 4.0) == Approx(3.0));
}

TEST_CASE("the bounded-load cap is ceil(load_factor * (total inflight + 1) / n)",
          "[policy][load]") {
    auto pool = make_pool(4);
    const std::vector<std::size_t> all = {0, 1, 2, 3};
    CHECK(load_cap(pool, all, 1.25) == 1); // 1.25 / 4
    for (auto& r : pool.replicas)
        r.inflight = 2;
    CHECK(load_cap(pool, all, 1.25) == 3); // 1.25 * 9 / 4 = 2.81
    pool.replicas[0].inflight = 3;
    CHECK(load_cap(pool, all, 1.25) == 4); // 1.25 * 10 / 4 = 3.125
    CHECK(load_cap(pool, all, 1.0) == 3);  // exactly 10 / 4 = 2.5
    pool.replicas[0].inflight = 5;         // 1.0 * 12 / 4 = 3 exactly: no rounding up
    CHECK(load_cap(pool, all, 1.0) == 3);
    CHECK(load_cap(pool, std::vector<std::size_t>{0}, 1.25) == 8); // 1.25 * 6
    pool.replicas[0].inflight = 49; // 1.1 * 50 is 55.00000000000001 in floating point
    CHECK(load_cap(pool, std::vector<std::size_t>{0}, 1.1) == 55);
    CHECK(within_cap(pool.replicas[1], 3));
    CHECK(!within_cap(pool.replicas[0], 49));
}

TEST_CASE("least_loaded spreads evenly when loads are equal", "[policy][least_loaded]") {
    least_loaded_policy p({});
    check_even_spread(p, route_reason::least_loaded);
}

TEST_CASE("least_loaded never prefers the strictly most loaded replica", "[policy][least_loaded]") {
    least_loaded_policy p({});
    auto pool = make_pool(4);
    pool.replicas[2].inflight = 5;
    // Two distinct draws: the loaded replica loses every comparison it takes part in, and the
    // others share its lost picks (each about a third, within 5% of 3333).
    const auto counts = count_picks(p, {}, pool, 10'000);
    CHECK(counts.count(2) == 0);
    for (const std::size_t i : {0, 1, 3}) {
        INFO("replica " << i);
        CHECK(counts.at(i) > 3'166);
        CHECK(counts.at(i) < 3'500);
    }
}

TEST_CASE("least_loaded compares scores, only inflight when the scrape is stale",
          "[policy][least_loaded]") {
    least_loaded_policy p({});
    auto pool = make_pool(2);
    pool.replicas[0].inflight = 2;
    pool.replicas[1].inflight = 1;
    pool.replicas[1].waiting = 5; // fresh: 1 + 5 = 6 > 2
    for (int i = 0; i < 20; ++i)
        CHECK(*route(p, {}, pool, {}).replica == 0);
    pool.replicas[1].waiting.reset(); // stale: 1 < 2
    for (int i = 0; i < 20; ++i)
        CHECK(*route(p, {}, pool, {}).replica == 1);
    pool.replicas[1].kv_usage = 0.5; // 1 + 4 * 0.5 = 3 > 2
    for (int i = 0; i < 20; ++i)
        CHECK(*route(p, {}, pool, {}).replica == 0);
}

TEST_CASE("least_loaded takes the only eligible replica and respects tried",
          "[policy][least_loaded]") {
    least_loaded_policy p({});
    auto pool = make_pool(3);
    pool.replicas[0].routable = false;
    pool.replicas[1].inflight = 100;
    for (int i = 0; i < 10; ++i)
        CHECK(*route(p, {}, pool, {"r2"}).replica == 1);
    CHECK(!route(p, {}, pool, {"r1", "r2"}).replica);
}

TEST_CASE("least_loaded keeps a growing pool balanced", "[policy][least_loaded]") {
    least_loaded_policy p({});
    auto pool = make_pool(4);
    for (int i = 0; i < 1'000; ++i)
        ++pool.replicas[*route(p, {}, pool, {}).replica].inflight;
    const auto [lo, hi] = std::minmax_element(
        pool.replicas.begin(), pool.replicas.end(),
        [](const replica_view& a, const replica_view& b) { return a.inflight < b.inflight; });
    // Power of two choices keeps the gap tiny (random would leave about 30).
    CHECK(hi->inflight - lo->inflight <= 4);
}
