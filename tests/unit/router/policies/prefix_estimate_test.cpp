// The prefix policy's estimate on hand-made cases: where a hot prefix earns a second home, where a
// session stays, where a cold prefix keeps one home, and what each term of the estimate adds.
#include "router/policies/prefix.hpp"

#include "tests/unit/router/policies/fake_pool.hpp"

#include <catch2/catch.hpp>

#include <set>

using namespace lanes::router;
using namespace lanes::router::test;
using lanes::common::block_hash;

namespace {

// A request routed and answered: its prefill is over and its blocks are settled where it went.
decision route_answered(prefix_policy& p, const route_request& req, const pool_snapshot& pool) {
    const decision d = decide(p, req, pool);
    const std::string& id = pool.replicas[*d.replica].id;
    const std::size_t held = p.on_routed(req, id);
    p.on_first_byte(req, id, held);
    p.on_outcome(req, id, held, true);
    return d;
}

} // namespace

TEST_CASE("prefix estimate: a cold prefix keeps one home", "[policy][prefix]") {
    prefix_policy p({});
    const auto pool = make_pool(4);
    const auto system = make_blocks(1, 10);
    std::set<std::size_t> homes;
    for (std::uint64_t k = 0; k < 20; ++k) {
        const auto blocks = concat(system, make_blocks(100 + k, 4));
        const decision d = route_answered(p, request_for(blocks), pool);
        homes.insert(*d.replica);
        if (k > 0) {
            CHECK(d.reason == route_reason::prefix_match);
            CHECK(d.matched_blocks == 10);
        }
    }
    CHECK(homes.size() == 1);
}

TEST_CASE("prefix estimate: a hot prefix spreads to a second home when its first is busy",
          "[policy][prefix]") {
    prefix_policy p({});
    const auto pool = make_pool(3);
    const auto system = make_blocks(1, 10);
    const std::size_t home = *route_answered(p, request_for(system), pool).replica;
    // New sessions on the same system prompt, none of them answered yet: each queues its 4 new
    // blocks at the home. At the home a session costs 16 x 4 uncached blocks plus the queue;
    // elsewhere 16 x 14: the home keeps them until 10 x 16 = 160 blocks (40 sessions) are queued
    // there, and the 41st too, as a tie goes to the longer match.
    std::size_t at_home = 0;
    std::optional<decision> moved;
    for (std::uint64_t k = 0; k < 60 && !moved; ++k) {
        const auto blocks = concat(system, make_blocks(100 + k, 4));
        const auto req = request_for(blocks); // (a request refers to its blocks)
        const decision d = decide(p, req, pool);
        p.on_routed(req, pool.replicas[*d.replica].id);
        if (*d.replica == home)
            ++at_home;
        else
            moved = d;
    }
    REQUIRE(moved);
    CHECK(at_home == 41);
    CHECK(moved->reason == route_reason::prefix_overload); // it held less than the home
    CHECK(moved->matched_blocks == 0);
    const std::size_t second = *moved->replica;
    // The second home now holds the prompt and has the shorter queue: the next sessions go there
    // with their system prompt cached, and the third replica stays out of it.
    for (std::uint64_t k = 0; k < 5; ++k) {
        const auto blocks = concat(system, make_blocks(200 + k, 4));
        const auto req = request_for(blocks);
        const decision d = decide(p, req, pool);
        p.on_routed(req, pool.replicas[*d.replica].id);
        CHECK(*d.replica == second);
        CHECK(d.matched_blocks == 10);
        CHECK(d.reason == route_reason::prefix_match);
    }
}

TEST_CASE("prefix estimate: a session does not move while its home keeps up", "[policy][prefix]") {
    prefix_policy p({});
    const auto pool = make_pool(2);
    const auto history = make_blocks(1, 60);
    const std::size_t home = *route_answered(p, request_for(history), pool).replica;
    const std::string home_id = pool.replicas[home].id;
    // Other prompts queue 500 blocks of prefill at the home: less than the 16 x 60 blocks the
    // session would recompute elsewhere.
    p.on_routed(request_for(make_blocks(2, 500)), home_id);
    const auto turn_blocks = concat(history, make_blocks(3, 2));
    const auto next_turn = request_for(turn_blocks);
    decision d = decide(p, next_turn, pool);
    CHECK(*d.replica == home);
    CHECK(d.matched_blocks == 60);
    // 1,000 blocks queued there are more than that: the turn moves.
    p.on_routed(request_for(make_blocks(4, 500)), home_id);
    d = decide(p, next_turn, pool);
    CHECK(*d.replica != home);
    CHECK(d.reason == route_reason::prefix_overload);
    // With a recompute weight of 4, it moves at a quarter of that queue.
    policy_options light;
    light.prefix.recompute_weight = 4;
    prefix_policy q(light);
    const std::size_t q_home = *route_answered(q, request_for(history), pool).replica;
    q.on_routed(request_for(make_blocks(2, 250)), pool.replicas[q_home].id);
    CHECK(*decide(q, next_turn, pool).replica != q_home);
}

TEST_CASE("prefix estimate: seconds from the fitted cost model, per candidate",
          "[policy][prefix]") {
    prefix_policy p({});
    auto pool = make_pool(2);
    const auto system = make_blocks(1, 10);
    route_answered(p, request_for(system), pool); // somewhere: call it the home
    const auto blocks = concat(system, make_blocks(2, 2));
    const auto req = request_for(blocks);
    pool.replicas[0].prefill = prefill_cost{0.020, 1e-4, 10.0};
    pool.replicas[1].prefill = prefill_cost{0.030, 3e-4, 10.0};
    const decision d = decide(p, req, pool);
    const auto& estimates = d.estimates;
    REQUIRE(estimates.size() == 2);
    // Each replica's own per-request cost, the fleet's mean per-token cost (2e-4 s), and 16
    // times the uncached tokens (16 tokens a block).
    for (const auto& e : estimates) {
        INFO("replica " << e.replica);
        const double uncached_tokens = static_cast<double>((12 - e.matched) * 16);
        const double per_request = e.replica == 0 ? 0.020 : 0.030;
        CHECK(e.queued_tokens == 0);
        CHECK(e.seconds == Approx(per_request + 2e-4 * 16 * uncached_tokens));
    }
    CHECK(*d.replica == (estimates[0].seconds < estimates[1].seconds ? 0u : 1u));
    // A step cost at the home higher than the prefill the prefix saves sends the request away.
    const std::size_t home = estimates[0].matched == 10 ? 0 : 1;
    pool.replicas[home].prefill->per_request_s = 1.0;
    CHECK(*decide(p, req, pool).replica != home);
}

TEST_CASE("prefix estimate: beyond max_num_seqs a request waits for a slot", "[policy][prefix]") {
    prefix_policy p({});
    auto pool = make_pool(2);
    const auto system = make_blocks(1, 10);
    const std::size_t home = *route_answered(p, request_for(system), pool).replica;
    const auto blocks = concat(system, make_blocks(2, 2));
    const auto req = request_for(blocks);
    for (auto& r : pool.replicas)
        r.prefill = prefill_cost{0.02, 1e-5, 2.0}; // a slot frees every half second
    pool.replicas[home].max_num_seqs = 4;
    pool.replicas[home].inflight = 3; // room for one more: it stays
    CHECK(*decide(p, req, pool).replica == home);
    pool.replicas[home].inflight = 4; // full: half a second for a slot, more than the prompt
    CHECK(*decide(p, req, pool).replica != home);
    pool.replicas[home].running = 4; // the replica's own count says as much
    pool.replicas[home].inflight = 0;
    pool.replicas[home].waiting = 1;
    CHECK(*decide(p, req, pool).replica != home);
    for (auto& r : pool.replicas)
        r.prefill->finish_rate = 1e4; // slots free at once: the wait is nothing
    CHECK(*decide(p, req, pool).replica == home);
}

TEST_CASE("prefix estimate: other routers' queue counts from the scrape", "[policy][prefix]") {
    prefix_policy p({});
    auto pool = make_pool(2);
    const auto system = make_blocks(1, 4);
    // Both replicas hold the prompt; requests routed so far had 8 uncached blocks each.
    for (const char* id : {"r0", "r1"}) {
        const auto blocks = concat(system, make_blocks(id[1] == '0' ? 2 : 3, 8));
        const auto req = request_for(blocks);
        const std::size_t held = p.on_routed(req, id);
        p.on_first_byte(req, id, held);
    }
    const auto blocks = concat(system, make_blocks(4, 1));
    const auto req = request_for(blocks);
    const std::size_t first = *decide(p, req, pool).replica;
    // 40 requests waiting at that replica that this router did not send: queued prefill there.
    pool.replicas[first].waiting = 40;
    const decision d = decide(p, req, pool);
    CHECK(*d.replica != first);
    CHECK(d.estimates[first].queued_tokens > 0);
    CHECK(d.estimates[1 - first].queued_tokens == 0);
}
