#include "router/policies/kv_aware.hpp"

#include "tests/unit/router/policies/fake_pool.hpp"

#include <catch2/catch.hpp>

using namespace lanes::router;
using namespace lanes::router::test;
using lanes::common::block_hash;

namespace {

// Two replicas reporting 100 KV blocks each; r0 holds the first 8 of the request's 10 blocks.
struct fixture {
    pool_snapshot pool = make_pool(2);
    std::vector<block_hash> blocks = make_blocks(1, 10);

    explicit fixture(kv_aware_policy& p) {
        for (auto& r : pool.replicas) {
            r.num_blocks = 100;
            r.kv_usage = 0.0;
        }
        p.on_routed(request_for({blocks.begin(), blocks.begin() + 8}), "r0");
    }
};

} // namespace

TEST_CASE("kv_aware prefers the cached prefix unless its decode load outweighs the saving",
          "[policy][kv_aware]") {
    kv_aware_policy p({});
    fixture f(p);
    // r0: 2 uncached + 5 active = 7; r1: 10 uncached + 0 = 10.
    f.pool.replicas[0].kv_usage = 0.05;
    const decision hit = decide(p, request_for(f.blocks), f.pool, {});
    CHECK(*hit.replica == 0);
    CHECK(hit.reason == route_reason::kv_cost);
    CHECK(hit.matched_blocks == 8);
    // r0: 2 + 9 = 11 > 10: the 8 saved blocks no longer pay for its decode load.
    f.pool.replicas[0].kv_usage = 0.09;
    const decision busy = decide(p, request_for(f.blocks), f.pool, {});
    CHECK(*busy.replica == 1);
    CHECK(busy.reason == route_reason::kv_cost);
    CHECK(busy.matched_blocks == 0);
}

TEST_CASE("kv_aware weighs the overlap by overlap_weight", "[policy][kv_aware]") {
    policy_options o;
    o.kv_aware.overlap_weight = 2.0;
    kv_aware_policy p(o);
    fixture f(p);
    f.pool.replicas[0].kv_usage = 0.09; // r0: 2 * 2 + 9 = 13; r1: 2 * 10 = 20
    CHECK(*decide(p, request_for(f.blocks), f.pool, {}).replica == 0);
    f.pool.replicas[0].kv_usage = 0.17; // r0: 4 + 17 = 21 > 20
    CHECK(*decide(p, request_for(f.blocks), f.pool, {}).replica == 1);
}

TEST_CASE("kv_aware estimates decode load from inflight without a scrape", "[policy][kv_aware]") {
    kv_aware_policy p({});
    fixture f(p);
    for (auto& r : f.pool.replicas)
        r.kv_usage.reset();
    // r0: 2 + 0 * 10 = 2; r1: 10.
    CHECK(*decide(p, request_for(f.blocks), f.pool, {}).replica == 0);
    f.pool.replicas[0].inflight = 1; // r0: 2 + 1 * 10 = 12 > 10
    CHECK(*decide(p, request_for(f.blocks), f.pool, {}).replica == 1);
}

TEST_CASE("kv_aware breaks cost ties by inflight", "[policy][kv_aware]") {
    kv_aware_policy p({});
    auto pool = make_pool(3);
    for (auto& r : pool.replicas) {
        r.num_blocks = 100;
        r.kv_usage = 0.1;
        r.inflight = 5;
    }
    pool.replicas[1].inflight = 2;
    const auto blocks = make_blocks(3, 4);
    CHECK(*decide(p, request_for(blocks), pool, {}).replica == 1);
    pool.replicas[2].inflight = 1;
    CHECK(*decide(p, request_for(blocks), pool, {}).replica == 2);
}

TEST_CASE("kv_aware respects tried, learns from on_routed and forgets departed replicas",
          "[policy][kv_aware]") {
    kv_aware_policy p({});
    fixture f(p);
    const decision retry = decide(p, request_for(f.blocks), f.pool, {"r0"});
    CHECK(*retry.replica == 1);
    CHECK(!decide(p, request_for(f.blocks), f.pool, {"r0", "r1"}).replica);

    p.on_routed(request_for(f.blocks), "r1"); // r1 now holds all 10
    const decision d = decide(p, request_for(f.blocks), f.pool, {});
    CHECK(*d.replica == 1);
    CHECK(d.matched_blocks == 10);

    auto only_r0 = f.pool;
    only_r0.replicas.pop_back();
    p.on_replicas_changed(only_r0);
    CHECK(p.index().size("r1") == 0);
    CHECK(p.index().size("r0") == 8);
}
