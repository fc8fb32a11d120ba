// The prefix policy with the replicas' KV events (a live precise index): what it expects of a
// routed request, and where it places new prefixes before the first events arrive.
#include "router/policies/prefix.hpp"

#include "router/index/precise_index.hpp"
#include "router/policies/rendezvous.hpp"
#include "tests/unit/router/policies/fake_pool.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <map>

using namespace lanes::router;
using namespace lanes::router::test;

TEST_CASE("prefix: with KV events, routed blocks are expected only as far as the index records",
          "[policy][prefix]") {
    policy_options o;
    o.index.capacity = 100; // max_request_share 0.5: 50 blocks a request
    o.precise = std::make_shared<precise_index>();
    prefix_policy p(o);
    const auto pool = make_pool(2);
    const std::string& id = pool.replicas[0].id;
    o.precise->reset(id, true); // its events are live
    p.on_replicas_changed(pool);
    // A prompt longer than the whole index (a body the replica will refuse): nothing expected.
    const auto huge = make_blocks(1, 100'000);
    p.on_routed(request_for(huge), id);
    CHECK(o.precise->match(id, huge) == 0);
    // One within it: its leading share, as the index records it.
    const auto fits = make_blocks(2, 80);
    p.on_routed(request_for(fits), id);
    CHECK(o.precise->match(id, fits) == 50);
}

TEST_CASE("prefix: with KV events live on an empty fleet, new prefixes spread in rendezvous order",
          "[policy][prefix]") {
    policy_options o;
    o.precise = std::make_shared<precise_index>();
    prefix_policy p(o);
    const auto pool = make_pool(4);
    for (const auto& r : pool.replicas) {
        o.precise->reset(r.id, true); // live, and nothing stored yet
        o.precise->confirm(r.id, r.epoch);
    }
    p.on_replicas_changed(pool);
    // A burst of new prefixes before any replica's events arrive: each in rendezvous order (as
    // another router would place it), passing over a replica a request's worth fuller than the
    // mean, so that they spread evenly however the hash falls.
    std::map<route_reason, int> reasons;
    std::map<std::size_t, int> homes;
    int as_hashed = 0;
    for (std::uint64_t family = 0; family < 32; ++family) {
        const auto blocks = make_blocks(family, 8);
        const std::vector<std::size_t> all = {0, 1, 2, 3};
        const rendezvous_order order(prefix_key(blocks, 4), pool, all);
        const std::size_t top =
            *std::min_element(all.begin(), all.end(),
                              [&](std::size_t a, std::size_t b) { return order.before(a, b); });
        const decision d = route(p, request_for(blocks), pool);
        ++reasons[d.reason];
        ++homes[*d.replica];
        as_hashed += *d.replica == top;
    }
    CHECK(reasons[route_reason::prefix_hash] == 32);
    REQUIRE(homes.size() == 4);
    for (const auto& [replica, n] : homes) {
        INFO("replica " << replica);
        CHECK(n >= 7);
        CHECK(n <= 9);
    }
    INFO(as_hashed << " of 32 where plain hashing puts them");
    CHECK(as_hashed >= 20); // where another router, placing the same prefixes, puts most of them
}

TEST_CASE("prefix: with KV events, a decision reads the clock once, not once a replica",
          "[policy][prefix]") {
    policy_options o;
    o.precise = std::make_shared<precise_index>();
    int reads = 0;
    const auto t0 = std::chrono::steady_clock::now();
    o.clock = [&reads, t0] {
        ++reads;
        return t0;
    };
    prefix_policy p(o);
    const auto pool = make_pool(8);
    for (const auto& r : pool.replicas) {
        o.precise->reset(r.id, true);
        o.precise->confirm(r.id, r.epoch);
    }
    p.on_replicas_changed(pool);
    const auto blocks = make_blocks(7, 16);
    p.on_routed(request_for(blocks), pool.replicas[5].id); // expected there until events say
    reads = 0;
    const route_request req = request_for(blocks);
    const decision d = decide(p, req, pool, {});
    REQUIRE(d.replica);
    CHECK(*d.replica == 5);
    CHECK(d.reason == route_reason::prefix_match_precise);
    CHECK(reads == 1);
    // The next decision reads it afresh.
    decide(p, req, pool, {});
    CHECK(reads == 2);
}
