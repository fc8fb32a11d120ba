#include "router/policies/policy.hpp"

#include "tests/unit/router/policies/fake_pool.hpp"

#include <catch2/catch.hpp>

#include <array>
#include <optional>

using namespace lanes::router;
using namespace lanes::router::test;

TEST_CASE("a replica in `full` is left out as one in `tried` is, and the two stay apart",
          "[policy]") {
    const auto pool = make_pool(4);
    const route_request any;
    CHECK(eligible_indices(pool, any, {"r0"}, {"r2"}) == std::vector<std::size_t>{1, 3});
    for (const auto& name : policy_names()) {
        INFO(name);
        auto p = make_policy(name, {});
        const tried_set full{"r0", "r1", "r3"};
        for (int i = 0; i < 10; ++i) {
            const auto d = p->pick(any, pool, {}, full);
            REQUIRE(d.replica);
            CHECK(*d.replica == 2);
        }
        CHECK_FALSE(p->pick(any, pool, {"r2"}, full).replica);
    }
}

namespace {

// The same traffic for two copies of a policy: prompts from a few families (so prefixes repeat),
// a session key on every other request.
struct traffic {
    std::vector<std::vector<lanes::common::block_hash>> prompts;
    std::vector<std::optional<session_ref>> sessions;
    route_request at(std::size_t i) const {
        route_request r = request_for(prompts[i % prompts.size()]);
        r.session = sessions[i % sessions.size()];
        return r;
    }
};

traffic make_traffic() {
    traffic t;
    for (std::uint64_t f = 0; f < 6; ++f) {
        t.prompts.push_back(concat(make_blocks(f, 4), make_blocks(100 + f, 1 + f % 3)));
        t.sessions.push_back(f % 2 ? std::optional<session_ref>(session_ref{f, f * 7})
                                   : std::nullopt);
    }
    return t;
}

} // namespace

TEST_CASE("pick changes nothing: a policy peeked at twice decides as one never peeked at",
          "[policy]") {
    // Admission peeks with pick() while a request waits; what the policy records (a round-robin
    // turn, a session's home, random draws, a prefix index) moves only in on_routed. Two copies
    // with the same seed and clock route the same requests; one is also peeked at twice before
    // each. Any state a pick changed would show as a different later choice.
    auto pool = make_pool(5);
    pool.replicas[2].inflight = 3; // load differs, so load-aware choices are not all ties
    const traffic t = make_traffic();
    for (const auto& name : policy_names()) {
        INFO(name);
        manual_clock clock;
        policy_options options;
        options.clock = clock.fn();
        auto plain = make_policy(name, options);
        auto peeked = make_policy(name, options);
        plain->on_replicas_changed(pool);
        peeked->on_replicas_changed(pool);
        for (std::size_t i = 0; i < 200; ++i) {
            const route_request req = t.at(i);
            const decision first = peeked->pick(req, pool, {});
            const decision second = peeked->pick(req, pool, {});
            CHECK(first.replica == second.replica);
            CHECK(first.reason == second.reason);
            const decision a = route(*plain, req, pool);
            const decision b = route(*peeked, req, pool);
            REQUIRE(a.replica == b.replica);
            CHECK(a.reason == b.reason);
            CHECK(a.replica == first.replica); // the peek saw what the pick then did
            clock.advance(std::chrono::milliseconds(10));
        }
    }
}
