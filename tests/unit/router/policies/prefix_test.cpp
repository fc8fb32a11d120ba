#include "router/policies/prefix.hpp"

#include "router/policies/rendezvous.hpp"
#include "tests/unit/router/policies/fake_pool.hpp"

#include <catch2/catch.hpp>

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

TEST_CASE("prefix: the imbalance switch needs both thresholds", "[policy][prefix]") {
    prefix_policy p({});
    auto pool = make_pool(2);
    const auto blocks = make_blocks(1, 8);
    p.on_routed(request_for(blocks), "r0");
    const auto check = [&](std::int64_t r0_waiting, std::int64_t r1_waiting, bool switched) {
        INFO("loads " << r0_waiting << " vs " << r1_waiting);
        pool.replicas[0].waiting = r0_waiting;
        pool.replicas[1].waiting = r1_waiting;
        const decision d = decide(p, request_for(blocks), pool, {});
        CHECK(*d.replica == (switched ? 1u : 0u));
        CHECK(d.reason == (switched ? route_reason::prefix_imbalance : route_reason::prefix_match));
        CHECK(d.matched_blocks == (switched ? 0u : 8u));
    };
    check(64, 0, false);    // gap 64: not above the absolute threshold
    check(65, 0, true);     // gap 65 and 65 > 1.5 * 0
    check(300, 200, false); // gap 100 but 300 is not above 1.5 * 200
    check(301, 200, true);  // gap 101 and 301 > 300
    check(1000, 999, false);
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
    // None above 1.25 * mean + 1 = 313.5.
    for (const auto& r : pool.replicas) {
        INFO(r.id);
        CHECK(r.inflight <= 313);
        CHECK(r.inflight > 0);
    }
    CHECK(reasons[route_reason::prefix_hash] == 1);
    CHECK(reasons[route_reason::prefix_match] > 0);
    CHECK(reasons[route_reason::prefix_overload] > 0);
}

TEST_CASE("prefix: over the cap, the longest match within the cap", "[policy][prefix]") {
    policy_options no_floor;
    no_floor.load.cap_floor = 0;                // the raw bounded-load arithmetic,
    no_floor.prefix.load_factor = 1.25;         // with the session policy's factor
    no_floor.prefix.long_match_load_factor = 0; // whatever share of the prompt is cached
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

TEST_CASE("prefix: the default cap lets a replica holding the whole prompt take three times its "
          "share",
          "[policy][prefix]") {
    policy_options no_floor;
    no_floor.load.cap_floor = 0; // the load factors stay at their defaults, 2 and 1
    prefix_policy p(no_floor);
    auto pool = make_pool(4);
    const auto blocks = make_blocks(1, 8);
    p.on_routed(request_for(blocks), "r0");
    pool.replicas[0].inflight = 5; // total 5: cap ceil(3 * 6 / 4) = 5, and 5 + 1 is over
    CHECK(decide(p, request_for(blocks), pool, {}).reason == route_reason::prefix_overload);
    pool.replicas[1].inflight = 2; // total 7: cap ceil(3 * 8 / 4) = 6, and 5 + 1 fits
    const decision d = decide(p, request_for(blocks), pool, {});
    CHECK(*d.replica == 0);
    CHECK(d.reason == route_reason::prefix_match);
}

TEST_CASE("prefix: the cap for leaving a replica grows with the share of the prompt it holds",
          "[policy][prefix]") {
    policy_options no_floor;
    no_floor.load.cap_floor = 0;
    const auto blocks = make_blocks(1, 8);
    // Its first half cached at r0, then blocks r0 never saw.
    const auto half = concat({blocks.begin(), blocks.begin() + 4}, make_blocks(9, 4));
    const auto pick_with = [&](double long_match_load_factor, const std::vector<block_hash>& req) {
        policy_options o = no_floor;
        o.prefix.long_match_load_factor = long_match_load_factor;
        prefix_policy p(o);
        p.on_routed(request_for(blocks), "r0");
        auto pool = make_pool(4);
        pool.replicas[0].inflight = 5;
        pool.replicas[1].inflight = 2; // total 7
        return decide(p, request_for(req), pool, {});
    };
    // The whole prompt at r0: factor 2 + 1, cap ceil(3 * 8 / 4) = 6, and 5 + 1 fits.
    const decision whole = pick_with(1.0, blocks);
    CHECK(*whole.replica == 0);
    CHECK(whole.reason == route_reason::prefix_match);
    CHECK(whole.matched_blocks == 8);
    // Half of it: factor 2 + 0.5, cap ceil(2.5 * 8 / 4) = 5, and 5 + 1 is over.
    const decision halfway = pick_with(1.0, half);
    CHECK(*halfway.replica != 0);
    CHECK(halfway.reason == route_reason::prefix_overload);
    // Without the growth the whole prompt leaves too: factor 2, cap ceil(2 * 8 / 4) = 4.
    const decision flat = pick_with(0.0, blocks);
    CHECK(*flat.replica != 0);
    CHECK(flat.reason == route_reason::prefix_overload);
}

TEST_CASE("prefix: below the cap floor a prefix stays on its replica", "[policy][prefix]") {
    prefix_policy p({}); // load_cap_floor 8
    auto pool = make_pool(4);
    const auto blocks = make_blocks(1, 8);
    p.on_routed(request_for(blocks), "r0");
    pool.replicas[0].inflight = 7; // raw cap ceil(2 * 8 / 4) = 4, floor 8: 7 + 1 fits
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

TEST_CASE("prefix: min_match_ratio decides between a match and a miss", "[policy][prefix]") {
    const auto blocks = make_blocks(1, 20);
    const auto pool = make_pool(4);
    const auto with_cached = [&](const policy_options& o, std::size_t cached) {
        prefix_policy p(o);
        p.on_routed(request_for({blocks.begin(), blocks.begin() + static_cast<long>(cached)}),
                    "r0");
        p.on_routed(request_for(make_blocks(2, 1)), "r1"); // r0 is not the least full index
        return decide(p, request_for(blocks), pool, {});
    };
    const decision hit = with_cached({}, 2); // 2 / 20 reaches the default 0.1
    CHECK(*hit.replica == 0);
    CHECK(hit.reason == route_reason::prefix_match);
    CHECK(hit.matched_blocks == 2);
    const decision miss = with_cached({}, 1); // 1 / 20 does not
    CHECK(miss.reason == route_reason::prefix_miss);
    CHECK(*miss.replica != 0);
    CHECK(miss.matched_blocks == 0);
    policy_options strict;
    strict.prefix.min_match_ratio = 0.5;
    CHECK(with_cached(strict, 9).reason == route_reason::prefix_miss);
    CHECK(with_cached(strict, 10).reason == route_reason::prefix_match);
}

TEST_CASE("prefix: unknown prefixes and empty requests go to least_loaded", "[policy][prefix]") {
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
    low_floor.load.cap_floor = 4; // prefix_load_factor stays at its default, 2
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
    // Over the cap (ceil(2 * 5 / 3) = 4, floor 4: 4 + 1 is over), the next least full.
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
    CHECK(homes == std::map<std::size_t, int>{{0, 3}, {1, 2}, {2, 2}, {3, 1}});
}

TEST_CASE("prefix: between equally full indexes, a miss goes where less prefill is pending",
          "[policy][prefix]") {
    prefix_policy p({}); // miss_prefill_weight 16
    auto pool = make_pool(2);
    // r0 and r1 hold prefixes of equal size; both have one request in flight.
    const auto long_prompt = make_blocks(1, 40);
    const auto short_prompt = make_blocks(2, 4);
    const std::size_t held0 = p.on_routed(request_for(long_prompt), "r0");
    const std::size_t held1 = p.on_routed(request_for(short_prompt), "r1");
    p.on_routed(request_for(make_blocks(5, 36)), "r1");
    p.on_first_byte(request_for(make_blocks(5, 36)), "r1", 0);
    pool.replicas[0].inflight = 1;
    pool.replicas[1].inflight = 1;
    // A new 10-block prompt: r0 is prefilling 40 blocks (16 x 40 / 10 = 64 more), r1 4 (6.4).
    const auto fresh = make_blocks(3, 10);
    decision d = decide(p, request_for(fresh), pool, {});
    CHECK(d.reason == route_reason::prefix_miss);
    CHECK(*d.replica == 1);
    // r0's answer began: its prefill is over, and r1's 4 pending blocks make r0 the cheaper one.
    p.on_first_byte(request_for(long_prompt), "r0", held0);
    d = decide(p, request_for(fresh), pool, {});
    CHECK(*d.replica == 0);
    // With the weight 0, pending prefill does not count: equal load, then rendezvous order,
    // whichever that is, the same as with nothing pending.
    policy_options o;
    o.prefix.miss_prefill_weight = 0;
    prefix_policy q(o);
    q.on_routed(request_for(long_prompt), "r0");
    q.on_routed(request_for(short_prompt), "r1");
    q.on_routed(request_for(make_blocks(5, 36)), "r1");
    const std::size_t by_order = *decide(q, request_for(fresh), pool, {}).replica;
    p.on_first_byte(request_for(short_prompt), "r1", held1);
    CHECK(*decide(p, request_for(fresh), pool, {}).replica == by_order);
}

TEST_CASE("prefix: between equal matches, pending prefill counts as load", "[policy][prefix]") {
    prefix_policy p({}); // match_prefill_blocks 128
    auto pool = make_pool(2);
    const auto shared = make_blocks(1, 4);
    p.on_routed(request_for(shared), "r0");
    p.on_routed(request_for(shared), "r1");
    // r0 took a 300-block prompt that has not begun to answer; r1 has two short requests.
    const auto long_prompt = concat(shared, make_blocks(2, 296));
    const std::size_t held = p.on_routed(request_for(long_prompt), "r0");
    pool.replicas[0].inflight = 1;
    pool.replicas[1].inflight = 2;
    // r0: 1 + floor(296 / 128) = 3 against r1's 2.
    const decision d = decide(p, request_for(concat(shared, make_blocks(3, 1))), pool, {});
    CHECK(*d.replica == 1);
    CHECK(d.reason == route_reason::prefix_match);
    CHECK(d.matched_blocks == 4);
    // Once it answers, r0 is the less loaded again.
    p.on_first_byte(request_for(long_prompt), "r0", held);
    CHECK(*decide(p, request_for(concat(shared, make_blocks(3, 1))), pool, {}).replica == 0);
    // With match_prefill_blocks 0, only the load score counts.
    policy_options o;
    o.prefix.match_prefill_blocks = 0;
    prefix_policy q(o);
    q.on_routed(request_for(shared), "r0");
    q.on_routed(request_for(shared), "r1");
    q.on_routed(request_for(long_prompt), "r0");
    CHECK(*decide(q, request_for(concat(shared, make_blocks(3, 1))), pool, {}).replica == 0);
}
