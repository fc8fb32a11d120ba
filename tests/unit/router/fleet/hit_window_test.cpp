#include "router/fleet/hit_window.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using lanes::router::hit_window;
using namespace std::chrono_literals;

TEST_CASE("the fleet hit rate is the window's hits over its queries", "[hit_window]") {
    hit_window w(60s);
    const auto t0 = hit_window::clock_type::now();
    CHECK(std::isnan(w.ratio())); // nothing queried yet
    w.add(0, 0, t0);
    CHECK(std::isnan(w.ratio()));
    w.add(30, 100, t0 + 1s);
    w.add(50, 100, t0 + 2s);
    CHECK(w.ratio() == Approx(0.4));
    // Scrapes within a second of each other fold into one sample; the totals still count.
    w.add(20, 100, t0 + 2100ms);
    CHECK(w.ratio() == Approx(100.0 / 300.0));
}

TEST_CASE("what is older than the window leaves the fleet hit rate", "[hit_window]") {
    hit_window w(10s);
    const auto t0 = hit_window::clock_type::now();
    w.add(0, 100, t0); // a cold start: nothing hit
    for (int s = 1; s <= 30; ++s)
        w.add(90, 100, t0 + std::chrono::seconds(s)); // then 90 % a second
    CHECK(w.ratio() == Approx(0.9));
    // A quiet window: nothing queried within it is no rate, not the old one.
    hit_window quiet(5s);
    quiet.add(10, 10, t0);
    quiet.add(0, 0, t0 + 1s);
    quiet.add(0, 0, t0 + 20s);
    quiet.add(0, 0, t0 + 30s);
    CHECK(std::isnan(quiet.ratio()));
}
