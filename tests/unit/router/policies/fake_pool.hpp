// Test helpers for the policy tests: fake snapshots, synthetic block hashes, a manual clock.
#pragma once

#include "router/policies/factory.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace lanes::router::test {

// Replicas "r0".."r{n-1}", routable, idle, nothing scraped.
inline pool_snapshot make_pool(int n) {
    pool_snapshot p;
    for (int i = 0; i < n; ++i)
        p.replicas.push_back({.id = "r" + std::to_string(i)});
    return p;
}

// `n` distinct synthetic block hashes for "prompt family" `family` (the policies treat hashes as
// opaque; equality by position is what matters).
inline std::vector<common::block_hash> make_blocks(std::uint64_t family, std::size_t n) {
    std::vector<common::block_hash> out;
    for (std::size_t i = 0; i < n; ++i)
        out.push_back(family * 1'000'003ULL + i + 1);
    return out;
}

inline std::vector<common::block_hash> concat(std::vector<common::block_hash> a,
                                              const std::vector<common::block_hash>& b) {
    a.insert(a.end(), b.begin(), b.end());
    return a;
}

inline route_request request_for(const std::vector<common::block_hash>& blocks) {
    route_request r;
    r.blocks = blocks;
    r.prompt_tokens = blocks.size() * common::default_block_size;
    return r;
}

// A pick on `pool` after the policy heard of it, as the router's snapshot refresh tells it (the
// test's pool may have changed since the last call: a capacity, an epoch, a replica).
inline decision decide(policy& p, const route_request& req, const pool_snapshot& pool,
                       const tried_set& tried = {}) {
    p.on_replicas_changed(pool);
    return p.pick(req, pool, tried);
}

// decide + on_routed, as the router does.
inline decision route(policy& p, const route_request& req, const pool_snapshot& pool,
                      const tried_set& tried = {}) {
    const decision d = decide(p, req, pool, tried);
    if (d.replica)
        p.on_routed(req, pool.replicas[*d.replica].id);
    return d;
}

// A clock the test moves by hand; copies share the time.
struct manual_clock {
    std::shared_ptr<std::chrono::steady_clock::time_point> now =
        std::make_shared<std::chrono::steady_clock::time_point>();
    clock_fn fn() const {
        return [t = now] { return *t; };
    }
    void advance(std::chrono::milliseconds d) const { *now += d; }
};

// Routes `count` times with the same request and snapshot, counting the chosen indices.
inline std::map<std::size_t, int> count_picks(policy& p, const route_request& req,
                                              const pool_snapshot& pool, int count) {
    std::map<std::size_t, int> counts;
    for (int i = 0; i < count; ++i) {
        const decision d = route(p, req, pool);
        if (d.replica)
            ++counts[*d.replica];
    }
    return counts;
}

// 40k picks over 4 equal replicas land within 3 % of 10k each (a fair coin's standard deviation
// is about 87), and the pick names `reason`.
inline void check_even_spread(policy& p, route_reason reason) {
    const auto pool = make_pool(4);
    const auto counts = count_picks(p, {}, pool, 40'000);
    REQUIRE(counts.size() == 4);
    for (const auto& [replica, n] : counts) {
        INFO("replica " << replica);
        CHECK(n >= 9'700);
        CHECK(n <= 10'300);
    }
    CHECK(p.pick({}, pool, {}).reason == reason);
}

} // namespace lanes::router::test
