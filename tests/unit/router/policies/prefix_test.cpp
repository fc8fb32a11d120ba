#include "router/policies/prefix.hpp"

#include "router/policies/rendezvous.hpp"
#include "tests/unit/router/policies/fake_pool.hpp"

#include <catch2/catch.hpp>

#include <map>
#include <set>

using namespace lanes::router;
using namespace lanes::router::test;
using lanes::common::block_hash;

TEST_CASE("prefix: the longest cached prefix wins", "[policy][prefix]") {
    prefix_policy p({});
    const auto pool = make_pool(3);
    const auto blocks = make_blocks(1, 8);
    const std::span<const block_hash> all(blocks);
    p.on_routed(request_for({all.begin(), all.begin() + 3}), "r0");
    p.on_routed(request_for({all.begin(), all.begin() + 5}), "r1");
    p.on_routed(request_for({all.begin(), all.begin() + 1}), "r2");
    const decision d = decide(p, request_for(blocks), pool, {});
    CHECK(*d.replica == 1);
    CHECK(d.reason == route_reason::prefix_match);
    CHECK(d.matched_blocks == 5);

    // A retry excludes it: the next longest.
    const decision retry = decide(p, request_for(blocks), pool, {"r1"});
    CHECK(*retry.replica == 0);
    CHECK(retry.matched_blocks == 3);
    CHECK(!decide(p, request_for(blocks), pool, {"r0", "r1", "r2"}).replica);
}

TEST_CASE("prefix: equal matches go to the lower load", "[policy][prefix]") {
    prefix_policy p({});
    auto pool = make_pool(3);
    const auto blocks = make_blocks(1, 6);
    p.on_routed(request_for(blocks), "r0");
    p.on_routed(request_for(blocks), "r1");
    pool.replicas[0].waiting = 5;
    pool.replicas[1].waiting = 3;
    CHECK(*decide(p, request_for(blocks), pool, {}).replica == 1);
    pool.replicas[1].waiting = 6;
    CHECK(*decide(p, request_for(blocks), pool, {}).replica == 0);
}

TEST_CASE("prefix: requests sharing a prefix go to the same replica", "[policy][prefix]") {
    prefix_policy p({});
    const auto pool = make_pool(4);
    std::set<std::size_t> used;
    for (std::uint64_t family = 0; family < 20; ++family) {
        const auto prefix = make_blocks(family, 6);
        std::set<std::size_t> homes;
        for (std::uint64_t k = 0; k < 5; ++k) {
            const auto blocks = concat(prefix, make_blocks(1'000 + family * 10 + k, 2));
            const decision d = route(p, request_for(blocks), pool);
            homes.insert(*d.replica);
            if (k > 0) {
                CHECK(d.reason == route_reason::prefix_match);
                CHECK(d.matched_blocks == 6);
            }
        }
        CHECK(homes.size() == 1);
        used.insert(*homes.begin());
    }
    CHECK(used.size() >= 3); // the families themselves spread
}

TEST_CASE("prefix: a hot prefix does not pile onto one replica", "[policy][prefix]") {
    prefix_policy p({});
    auto pool = make_pool(4);
    const auto blocks = make_blocks(7, 8);
    std::map<route_reason, int> reasons;
    for (int i = 0; i < 1'000; ++i) {
        const decision d = route(p, request_for(blocks), pool);
        ++pool.replicas[*d.replica].inflight; // nothing finishes
        ++reasons[d.reason];
    }
    // None above the cap, ceil(1.5 * 1000 / 4) = 375, so the prefix has at least three homes.
    int homes = 0;
    for (const auto& r : pool.replicas) {
        INFO(r.id);
        CHECK(r.inflight <= 375);
        homes += r.inflight > 0 ? 1 : 0;
    }
    CHECK(homes >= 3);
    CHECK(reasons[route_reason::prefix_hash] == 1);
    CHECK(reasons[route_reason::prefix_match] > 0);
    CHECK(reasons[route_reason::prefix_overload] > 0);
}

TEST_CASE("prefix: over the cap, the longest match within the cap", "[policy][prefix]") {
    policy_options no_floor;
    no_floor.load.cap_floor = 0;        // the raw bounded-load arithmetic,
    no_floor.prefix.load_factor = 1.25; // with the session policy's factor
    prefix_policy p(no_floor);
    auto pool = make_pool(4);
    const auto blocks = make_blocks(1, 8);
    p.on_routed(request_for(blocks), "r0");
    p.on_routed(request_for(std::vector<block_hash>(blocks.begin(), blocks.begin() + 4)), "r1");
    p.on_routed(request_for(make_blocks(2, 8)), "r2");
    pool.replicas[0].inflight = 10; // cap ceil(1.25 * 11 / 4) = 4
    const decision d = decide(p, request_for(blocks), pool, {});
    CHECK(*d.replica == 1);
    CHECK(d.reason == route_reason::prefix_overload);
    CHECK(d.matched_blocks == 4);
    pool.replicas[0].inflight = 3; // cap ceil(1.25 * 4 / 4) = 2: 3 + 1 is still over
    CHECK(decide(p, request_for(blocks), pool, {}).reason == route_reason::prefix_overload);
    pool.replicas[1].inflight = 3; // cap ceil(1.25 * 7 / 4) = 3: r0's 3 + 1 over, r1 too
    const decision e = decide(p, request_for(blocks), pool, {});
    CHECK(*e.replica != 0);
    CHECK(*e.replica != 1);
    CHECK(e.reason == route_reason::prefix_overload);
}

TEST_CASE("prefix: below the cap floor a prefix stays on its replica", "[policy][prefix]") {
    prefix_policy p({}); // load_cap_floor 8
    auto pool = make_pool(4);
    const auto blocks = make_blocks(1, 8);
    p.on_routed(request_for(blocks), "r0");
    pool.replicas[0].inflight = 7; // raw cap ceil(1.5 * 8 / 4) = 3, floor 8: 7 + 1 fits
    const decision d = decide(p, request_for(blocks), pool, {});
    CHECK(*d.replica == 0);
    CHECK(d.reason == route_reason::prefix_match);
    pool.replicas[0].inflight = 8; // 8 + 1 over both
    CHECK(decide(p, request_for(blocks), pool, {}).reason == route_reason::prefix_overload);
}

TEST_CASE("prefix: with an empty index independent routers agree by hashing", "[policy][prefix]") {
    policy_options other;
    other.seed = 12345;
    prefix_policy a({});
    prefix_policy b(other);
    const auto pool = make_pool(4);
    std::map<std::size_t, int> counts;
    for (std::uint64_t family = 0; family < 400; ++family) {
        const auto blocks = make_blocks(family, 6);
        const decision da = decide(a, request_for(blocks), pool, {});
        const decision db = decide(b, request_for(blocks), pool, {});
        CHECK(da.reason == route_reason::prefix_hash);
        CHECK(*da.replica == *db.replica);
        ++counts[*da.replica];
    }
    // 400 prefixes over 4 replicas: each within 40% of 100.
    REQUIRE(counts.size() == 4);
    for (const auto& [replica, n] : counts) {
        INFO("replica " << replica);
        CHECK(n > 60);
        CHECK(n < 140);
    }
    // Only the first hash_prefix_blocks (4) blocks count.
    const auto head = make_blocks(9, 4);
    const auto x = concat(head, make_blocks(10, 3));
    const auto y = concat(head, make_blocks(11, 5));
    CHECK(*decide(a, request_for(x), pool, {}).replica ==
          *decide(a, request_for(y), pool, {}).replica);
    // ...and all of them: prefixes that differ only in their fourth block spread.
    std::set<std::size_t> spread;
    for (std::uint64_t k = 0; k < 40; ++k)
        spread.insert(
            *decide(a, request_for(concat(make_blocks(9, 3), make_blocks(100 + k, 3))), pool, {})
                 .replica);
    CHECK(spread.size() >= 3);
}

TEST_CASE("prefix: a short match counts for the prefill it saves", "[policy][prefix]") {
    const auto blocks = make_blocks(1, 20);
    const auto pool = make_pool(4);
    prefix_policy p({});
    p.on_routed(request_for({blocks.begin(), blocks.begin() + 1}), "r0");
    p.on_routed(request_for(make_blocks(2, 1)), "r1"); // r0 is not the least full index
    // One block of 20 cached, queues alike: r0 saves that block's prefill.
    const decision hit = decide(p, request_for(blocks), pool, {});
    CHECK(*hit.replica == 0);
    CHECK(hit.reason == route_reason::prefix_match);
    CHECK(hit.matched_blocks == 1);
}

TEST_CASE("prefix: a new prefix goes to the least full index, an empty request to least_loaded",
          "[policy][prefix]") {
    prefix_policy p({});
    auto pool = make_pool(2);
    p.on_routed(request_for(make_blocks(1, 4)), "r0");
    pool.replicas[0].inflight = 2;
    const decision d = decide(p, request_for(make_blocks(2, 4)), pool, {});
    CHECK(*d.replica == 1);
    CHECK(d.reason == route_reason::prefix_miss);
    CHECK(d.matched_blocks == 0);
    const decision e = decide(p, {}, pool, {});
    CHECK(*e.replica == 1);
    CHECK(e.reason == route_reason::prefix_miss);
}

TEST_CASE("prefix: the index stays within capacity", "[policy][prefix]") {
    policy_options o;
    o.index.capacity = 64;
    prefix_policy p(o);
    auto pool = make_pool(3);
    pool.replicas[2].num_blocks = 16;
    for (std::uint64_t family = 0; family < 500; ++family)
        route(p, request_for(make_blocks(family, 8)), pool);
    CHECK(p.index().capacity("r0") == 64);
    CHECK(p.index().capacity("r2") == 16); // the 16 blocks it reports
    for (const auto& r : pool.replicas) {
        INFO(r.id);
        CHECK(p.index().size(r.id) <= p.index().capacity(r.id));
        CHECK(p.index().size(r.id) > 0);
    }
    o.index.capacity_factor = 2.0;
    prefix_policy twice(o);
    route(twice, request_for(make_blocks(1, 8)), pool);
    CHECK(twice.index().capacity("r2") == 32);
}

TEST_CASE("prefix: a replica that left is forgotten", "[policy][prefix]") {
    prefix_policy p({});
    const auto pool = make_pool(3);
    const auto blocks = make_blocks(1, 8);
    p.on_routed(request_for(blocks), "r0");
    p.on_routed(request_for(make_blocks(2, 8)), "r1");
    CHECK(p.index().size("r0") == 8);
    auto without = pool;
    without.replicas.erase(without.replicas.begin());
    p.on_replicas_changed(without);
    CHECK(p.index().size("r0") == 0);
    CHECK(p.index().size("r1") == 8);
    // r0 comes back empty: its old prefix is no longer a match there.
    p.on_replicas_changed(pool);
    const decision d = decide(p, request_for(blocks), pool, {});
    CHECK(d.reason == route_reason::prefix_miss);
    CHECK(d.matched_blocks == 0);
}

TEST_CASE("prefix: a request its replica refused teaches the index nothing", "[policy][prefix]") {
    prefix_policy p({});
    const auto pool = make_pool(3);
    const auto blocks = make_blocks(4, 8);
    const route_request req = request_for(blocks);
    const decision first = decide(p, req, pool, {});
    REQUIRE(first.replica);
    const std::string& id = pool.replicas[*first.replica].id;
    const std::size_t noted = p.on_routed(req, id);
    const decision burst = decide(p, req, pool, {}); // while pending, the prefix is its replica's
    CHECK(burst.reason == route_reason::prefix_match);
    CHECK(*burst.replica == *first.replica);
    p.on_outcome(req, id, noted, false); // the replica answered 400 (too long, say)
    const decision after = decide(p, req, pool, {});
    CHECK(after.reason != route_reason::prefix_match);
    CHECK(after.matched_blocks == 0);
}

TEST_CASE("prefix: a miss goes to the least full index within the load cap", "[policy][prefix]") {
    policy_options low_floor;
    low_floor.load.cap_floor = 4; // prefix_load_factor stays at its default, 1.5
    prefix_policy p(low_floor);
    auto pool = make_pool(3);
    p.on_routed(request_for(make_blocks(1, 8)), "r0");
    p.on_routed(request_for(make_blocks(2, 2)), "r1");
    p.on_routed(request_for(make_blocks(3, 4)), "r2");
    // r1 holds the fewest blocks: a new prefix goes there even with more in flight.
    pool.replicas[1].inflight = 3;
    decision d = decide(p, request_for(make_blocks(4, 6)), pool, {});
    CHECK(*d.replica == 1);
    CHECK(d.reason == route_reason::prefix_miss);
    // Over the cap (ceil(1.5 * 5 / 3) = 3, floor 4: 4 + 1 is over), the next least full.
    pool.replicas[1].inflight = 4;
    d = decide(p, request_for(make_blocks(4, 6)), pool, {});
    CHECK(*d.replica == 2);
    // Fill is relative to each replica's capacity: r0's 8 of 64 blocks is less full than
    // r1's 2 of 8 and r2's 4 of 16.
    pool.replicas[1].inflight = 0;
    pool.replicas[0].num_blocks = 64;
    pool.replicas[1].num_blocks = 8;
    pool.replicas[2].num_blocks = 16;
    CHECK(*decide(p, request_for(make_blocks(4, 6)), pool, {}).replica == 0);
    // New prefixes spread evenly: each goes to the least full index in turn.
    prefix_policy q({});
    const auto even = make_pool(4);
    q.on_routed(request_for(make_blocks(9, 8)), "r3"); // the index is not empty
    std::map<std::size_t, int> homes;
    for (std::uint64_t family = 10; family < 18; ++family)
        ++homes[*route(q, request_for(make_blocks(family, 8)), even).replica];
    // r3 already held a prefix: it takes one, the others the seven left, 3 + 2 + 2.
    CHECK(homes[3] == 1);
    std::multiset<int> rest{homes[0], homes[1], homes[2]};
    CHECK(rest == std::multiset<int>{2, 2, 3});
}

TEST_CASE("prefix: between equally full indexes, a miss goes where less prefill is queued",
          "[policy][prefix]") {
    prefix_policy p({});
    auto pool = make_pool(2);
    // r0 and r1 hold 40 blocks each; r0's prompt has not begun to answer, r1's 36 have.
    const auto long_prompt = make_blocks(1, 40);
    const std::size_t held0 = p.on_routed(request_for(long_prompt), "r0");
    p.on_routed(request_for(make_blocks(2, 4)), "r1");
    p.on_routed(request_for(make_blocks(5, 36)), "r1");
    p.on_first_byte(request_for(make_blocks(5, 36)), "r1", 0);
    const auto fresh = make_blocks(3, 10);
    decision d = decide(p, request_for(fresh), pool, {});
    CHECK(d.reason == route_reason::prefix_miss);
    CHECK(*d.replica == 1); // 4 blocks queued against 40
    p.on_first_byte(request_for(long_prompt), "r0", held0);
    d = decide(p, request_for(fresh), pool, {});
    CHECK(*d.replica == 0); // nothing queued against 4
}

TEST_CASE("prefix: between equal matches, queued prefill decides", "[policy][prefix]") {
    prefix_policy p({});
    auto pool = make_pool(2);
    const auto shared = make_blocks(1, 4);
    p.on_routed(request_for(shared), "r0");
    p.on_routed(request_for(shared), "r1");
    // r0 took a 300-block prompt that has not begun to answer; r1 has more requests in flight.
    const auto long_prompt = concat(shared, make_blocks(2, 296));
    const std::size_t held = p.on_routed(request_for(long_prompt), "r0");
    pool.replicas[0].inflight = 1;
    pool.replicas[1].inflight = 2;
    const decision d = decide(p, request_for(concat(shared, make_blocks(3, 1))), pool, {});
    CHECK(*d.replica == 1);
    CHECK(d.reason == route_reason::prefix_match);
    CHECK(d.matched_blocks == 4);
    // Once it answers, the queues are alike and r0, the less loaded, wins.
    p.on_first_byte(request_for(long_prompt), "r0", held);
    CHECK(*decide(p, request_for(concat(shared, make_blocks(3, 1))), pool, {}).replica == 0);
}
