// Token buckets on a virtual clock: burst then refill, a request bigger than the bucket delayed
// not refused, a key's own limits over the defaults, the table's bound, OpenAI's reset text.
#include "router/access/rate_limit.hpp"

#include <catch2/catch.hpp>

using namespace lanes;
using router::rate_limiter;
using namespace std::chrono_literals;

TEST_CASE("request bucket: a burst passes, then one request per 1/rps", "[access]") {
    rate_limiter limiter({.rps = 2, .burst = 3});
    const auto t0 = rate_limiter::clock::time_point{} + 1h;
    for (int i = 0; i < 3; ++i)
        CHECK(limiter.take_request("a", nullptr, t0).allowed);
    const auto refused = limiter.take_request("a", nullptr, t0);
    CHECK_FALSE(refused.allowed);
    CHECK(refused.retry_after == 500ms);
    CHECK(refused.state.limit == 3.0);
    CHECK(refused.state.remaining == 0.0);
    CHECK(refused.state.reset == 1500ms);
    CHECK(limiter.take_request("b", nullptr, t0).allowed); // another client has its own
    CHECK_FALSE(limiter.take_request("a", nullptr, t0 + 499ms).allowed);
    // A second at 2 a second: two more, not three.
    CHECK(limiter.take_request("a", nullptr, t0 + 1000ms).allowed);
    CHECK(limiter.take_request("a", nullptr, t0 + 1000ms).allowed);
    CHECK_FALSE(limiter.take_request("a", nullptr, t0 + 1000ms).allowed);
    // A long pause refills to the burst, not beyond.
    for (int i = 0; i < 3; ++i)
        CHECK(limiter.take_request("a", nullptr, t0 + 1h).allowed);
    CHECK_FALSE(limiter.take_request("a", nullptr, t0 + 1h).allowed);
}

TEST_CASE("token bucket: tpm refills per second, a big request leaves a debt", "[access]") {
    rate_limiter limiter({.tpm = 600}); // 10 a second
    const auto t0 = rate_limiter::clock::time_point{} + 1h;
    CHECK(limiter.take_tokens("a", nullptr, 500, t0).allowed);
    CHECK(limiter.take_tokens("a", nullptr, 100, t0).allowed);
    const auto short_of = limiter.take_tokens("a", nullptr, 50, t0);
    CHECK_FALSE(short_of.allowed);
    CHECK(short_of.retry_after == 5s);
    // Bigger than the bucket: passes once it is full, and then the bucket owes.
    CHECK_FALSE(limiter.take_tokens("a", nullptr, 1000, t0 + 30s).allowed);
    const auto big = limiter.take_tokens("a", nullptr, 1000, t0 + 60s);
    CHECK(big.allowed);
    CHECK(big.state.remaining == 0.0);
    CHECK(big.state.reset == 100s); // 1000 tokens to get back to 600 from -400
    CHECK_FALSE(limiter.take_tokens("a", nullptr, 1, t0 + 60s + 39s).allowed);
    CHECK(limiter.take_tokens("a", nullptr, 1, t0 + 60s + 41s).allowed);
    // The debt is at most one bucket: max_tokens 2^64 - 1 costs a minute's wait (two to refill),
    // not one for ever.
    const auto t1 = t0 + 1h;
    const auto huge = limiter.take_tokens("b", nullptr, 18446744073709551615.0, t1);
    CHECK(huge.allowed);
    CHECK(huge.state.reset == 120s);
    const auto owing = limiter.take_tokens("b", nullptr, 1, t1 + 1s);
    CHECK_FALSE(owing.allowed);
    CHECK(owing.retry_after == 59100ms); // 591 tokens short at 10 a second
    CHECK(limiter.take_tokens("b", nullptr, 1, t1 + 61s).allowed);
}

TEST_CASE("a key's own limits win over the defaults, and no limit passes everything", "[access]") {
    rate_limiter limiter({.rps = 100, .tpm = 0});
    router::key_limits own;
    own.rps = 1;
    own.tpm = 60;
    CHECK(limiter.rps_for(&own) == 1.0);
    CHECK(limiter.burst_for(&own) == 1.0);
    CHECK(limiter.tpm_for(&own) == 60.0);
    CHECK(limiter.tpm_for(nullptr) == 0.0);
    const auto t0 = rate_limiter::clock::time_point{} + 1h;
    CHECK(limiter.take_request("k", &own, t0).allowed);
    CHECK_FALSE(limiter.take_request("k", &own, t0).allowed);
    for (int i = 0; i < 1000; ++i)
        REQUIRE(limiter.take_tokens("anyone", nullptr, 1e9, t0).allowed);
    rate_limiter open({});
    for (int i = 0; i < 1000; ++i)
        REQUIRE(open.take_request("x", nullptr, t0).allowed);
    CHECK(open.clients() == 0); // nothing is remembered without a limit
}

TEST_CASE("the client table stays within max_clients", "[access]") {
    rate_limiter limiter({.rps = 1, .max_clients = 100});
    const auto t0 = rate_limiter::clock::time_point{} + 1h;
    for (int i = 0; i < 1000; ++i)
        limiter.take_request("client-" + std::to_string(i), nullptr, t0);
    CHECK(limiter.clients() <= 100);
    // Idle ones go first: after a while a new client finds room without pushing out a busy one.
    for (int i = 0; i < 1000; ++i)
        limiter.take_request("later-" + std::to_string(i), nullptr, t0 + 10min);
    CHECK(limiter.clients() <= 100);
}

TEST_CASE("past max_clients the least recently seen client goes, and no other", "[access]") {
    rate_limiter limiter({.rps = 1, .burst = 1, .max_clients = 3});
    const auto t0 = rate_limiter::clock::time_point{} + 1h;
    for (const char* who : {"a", "b", "c"})
        CHECK(limiter.take_request(who, nullptr, t0).allowed);
    CHECK_FALSE(limiter.take_request("a", nullptr, t0).allowed); // a seen again: most recent
    CHECK(limiter.take_request("d", nullptr, t0).allowed);       // b, least recent, goes
    CHECK(limiter.clients() == 3);
    CHECK(limiter.take_request("b", nullptr, t0).allowed);       // b comes back full; c goes
    CHECK_FALSE(limiter.take_request("a", nullptr, t0).allowed); // a and d kept their debts
    CHECK_FALSE(limiter.take_request("d", nullptr, t0).allowed);
    CHECK(limiter.clients() == 3);
}

TEST_CASE("300k rotating identities cost each request O(1)", "[access]") {
    // Identity churn: every request a new identity, past the table's size. Each new one
    // evicts one entry; the whole run stays far below a scan per request (100k x 300k).
    rate_limiter limiter({.rps = 1, .max_clients = 100000});
    const auto t0 = rate_limiter::clock::time_point{} + 1h;
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 300000; ++i)
        limiter.take_request("2001:db8::" + std::to_string(i), nullptr, t0);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    CHECK(limiter.clients() == 100000);
    CHECK(seconds < 5.0); // 0.125 s on the 2-core VM; a scan per eviction breaks it
}

TEST_CASE("reset durations read as OpenAI writes them", "[access]") {
    CHECK(router::reset_text(0ms) == "0ms");
    CHECK(router::reset_text(20ms) == "20ms");
    CHECK(router::reset_text(1000ms) == "1s");
    CHECK(router::reset_text(1500ms) == "1.5s");
    CHECK(router::reset_text(1234ms) == "1.234s");
    CHECK(router::reset_text(360000ms) == "6m0s");
    CHECK(router::reset_text(61500ms) == "1m1s");
}
