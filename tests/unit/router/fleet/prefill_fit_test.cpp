#include "router/fleet/prefill_fit.hpp"

#include <catch2/catch.hpp>

#include <random>

using namespace lanes::router;

namespace {

// Scrapes of a replica whose prefills take exactly a + b x uncached tokens each.
struct replica_counters {
    prefill_fit::counters c;
    void prefills(int n, double uncached_each, double cached_each, double a, double b) {
        c.prefills += n;
        c.prefill_seconds += n * (a + b * uncached_each);
        c.prompt_tokens += n * (uncached_each + cached_each);
        c.cached_tokens += n * cached_each;
        c.finished += n;
    }
};

} // namespace

TEST_CASE("prefill fit: recovers per-request and per-token costs", "[prefill_fit]") {
    prefill_fit fit;
    CHECK_FALSE(fit.cost());
    replica_counters r;
    std::mt19937_64 rng(7);
    std::uniform_int_distribution<int> count(0, 3);
    std::uniform_real_distribution<double> tokens(16, 2048);
    for (int i = 0; i < 200; ++i) {
        r.c.at_seconds = 0.1 * i;
        r.prefills(count(rng), tokens(rng), 100, 0.030, 2e-5);
        fit.observe(r.c);
    }
    REQUIRE(fit.cost());
    // Every interval's prefills were alike, so the interval sums lie on the plane exactly.
    CHECK(fit.cost()->per_request_s == Approx(0.030).epsilon(0.01));
    CHECK(fit.cost()->per_token_s == Approx(2e-5).epsilon(0.01));
    // About 1.5 requests an interval of 0.1 s.
    CHECK(fit.cost()->finish_rate == Approx(15).epsilon(0.3));
}

TEST_CASE("prefill fit: follows a replica whose steps slowed down", "[prefill_fit]") {
    prefill_fit fit(10);
    replica_counters r;
    std::mt19937_64 rng(3);
    std::uniform_real_distribution<double> tokens(16, 512);
    for (int i = 0; i < 100; ++i) {
        r.c.at_seconds = 0.1 * i;
        r.prefills(2, tokens(rng), 0, i < 50 ? 0.02 : 0.08, 1e-5);
        fit.observe(r.c);
    }
    CHECK(fit.cost()->per_request_s == Approx(0.08).epsilon(0.05));
}

TEST_CASE("prefill fit: alike prefills fold into the cost per token", "[prefill_fit]") {
    prefill_fit fit;
    replica_counters r;
    for (int i = 0; i < 20; ++i) {
        r.c.at_seconds = i;
        r.prefills(1, 100, 0, 0.01, 1e-4); // 0.02 s for 100 tokens, every time
        fit.observe(r.c);
    }
    REQUIRE(fit.cost());
    CHECK(fit.cost()->per_request_s == 0);
    CHECK(fit.cost()->per_token_s == Approx(2e-4));
}

TEST_CASE("prefill fit: a restart starts the deltas over, and junk is ignored", "[prefill_fit]") {
    prefill_fit fit;
    replica_counters r;
    for (int i = 0; i < 10; ++i) {
        r.c.at_seconds = i;
        r.prefills(2, 200 + 50 * i, 0, 0.02, 1e-4);
        fit.observe(r.c);
    }
    const auto before = *fit.cost();
    // The replica restarted: its counters went back. Nothing is learnt from that step.
    prefill_fit::counters fresh;
    fresh.at_seconds = 11;
    fit.observe(fresh);
    CHECK(fit.cost()->per_token_s == before.per_token_s);
    prefill_fit::counters junk = fresh;
    junk.prefill_seconds = std::numeric_limits<double>::quiet_NaN();
    fit.observe(junk);
    CHECK(fit.cost()->per_token_s == before.per_token_s);
    // No prefill in an interval: nothing learnt, nothing forgotten.
    fresh.at_seconds = 12;
    fit.observe(fresh);
    CHECK(fit.cost()->per_request_s == before.per_request_s);
}
