#include "router/fleet/health.hpp"

#include <catch2/catch.hpp>

using namespace lanes::router;
using namespace std::chrono_literals;

TEST_CASE("the breaker ejects after consecutive failures and re-admits after probing", "[health]") {
    health_tracker h({.failure_threshold = 3, .success_threshold = 2, .open_time = 5s});
    const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
    CHECK(h.routable(t0));
    CHECK(!h.on_failure(t0));
    CHECK(!h.on_failure(t0));
    CHECK(!h.on_success(t0)); // a success resets the count
    CHECK(!h.on_failure(t0));
    CHECK(!h.on_failure(t0));
    CHECK(h.on_failure(t0)); // third in a row: ejected
    CHECK(h.state(t0) == breaker_state::open);
    CHECK(!h.routable(t0 + 4s));
    CHECK(h.state(t0 + 5s) == breaker_state::half_open);
    CHECK(h.routable(t0 + 5s));
    // Half-open: one failure reopens at once, and the open time restarts.
    CHECK(h.on_failure(t0 + 6s));
    CHECK(!h.routable(t0 + 10s));
    CHECK(h.routable(t0 + 11s));
    CHECK(!h.on_success(t0 + 11s));
    CHECK(h.on_success(t0 + 11s)); // second success: closed
    CHECK(h.state(t0 + 11s) == breaker_state::closed);
    CHECK(!h.on_failure(t0 + 12s)); // counting starts over
}

TEST_CASE("a half-open replica takes one request at a time", "[health]") {
    health_tracker h({.failure_threshold = 1, .success_threshold = 2, .open_time = 5s});
    const auto t0 = std::chrono::steady_clock::time_point{} + 1h;
    CHECK(h.admits(t0, 7)); // closed: any load
    CHECK(h.on_failure(t0));
    CHECK(!h.admits(t0 + 1s, 0)); // open: nothing
    CHECK(h.admits(t0 + 5s, 0));  // half-open: a trial
    CHECK(!h.admits(t0 + 5s, 1)); // not while the trial is out
    CHECK(!h.on_success(t0 + 6s));
    CHECK(!h.admits(t0 + 6s, 1));
    CHECK(h.on_success(t0 + 6s)); // closed again: the whole load
    CHECK(h.admits(t0 + 6s, 40));
}

TEST_CASE("an ejection is active while a probe failed since the last one answered", "[health]") {
    using namespace std::chrono_literals;
    lanes::router::health_tracker h({1, 1, 1'000ms, 50});
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_FALSE(h.ejection_state(t0).open);
    CHECK(h.on_failure(t0)); // a failed request
    auto e = h.ejection_state(t0);
    CHECK(e.open);
    CHECK_FALSE(e.by_probe);
    CHECK(e.last_failure == t0);
    h.on_failure(t0 + 10ms, lanes::router::failure_origin::probe);
    e = h.ejection_state(t0 + 10ms);
    CHECK(e.by_probe);
    CHECK(e.last_failure == t0 + 10ms);
    // Half-open after the open time; a request's success does not clear the probe's failure, a
    // probe's does.
    CHECK(h.on_success(t0 + 2s));
    CHECK(h.ejection_state(t0 + 2s).by_probe == true);
    h.on_success(t0 + 2s, lanes::router::failure_origin::probe);
    CHECK_FALSE(h.ejection_state(t0 + 2s).by_probe);
}

TEST_CASE("a probe that timed out ejects as a failed request does: under the cap", "[health]") {
    using namespace std::chrono_literals;
    lanes::router::health_tracker h({3, 1, 1'000ms, 50});
    const auto t0 = std::chrono::steady_clock::now();
    CHECK_FALSE(h.on_failure(t0, lanes::router::failure_origin::probe_slow));
    CHECK_FALSE(h.on_failure(t0 + 1s, lanes::router::failure_origin::probe_slow));
    CHECK(h.on_failure(t0 + 2s, lanes::router::failure_origin::probe_slow)); // the third ejects
    auto e = h.ejection_state(t0 + 2s);
    CHECK(e.open);
    CHECK_FALSE(e.by_probe); // busy, not gone: the cap on passive ejection applies
    // A refused probe after it makes the ejection active.
    h.on_failure(t0 + 2100ms, lanes::router::failure_origin::probe);
    CHECK(h.ejection_state(t0 + 2100ms).by_probe);
}
