#include "router/fleet/sequence_tracker.hpp"

#include <catch2/catch.hpp>

using namespace lanes::router;
using action = sequence_tracker::action;

namespace {

// A tracker that has applied batches 0..last in order.
sequence_tracker at(std::int64_t last) {
    sequence_tracker t;
    t.joined(std::nullopt);
    CHECK(t.next(0).what == action::restart);
    t.done(0, std::nullopt);
    for (std::int64_t s = 1; s <= last; ++s) {
        CHECK(t.next(s).what == action::apply);
        t.done(s, std::nullopt);
    }
    return t;
}

} // namespace

TEST_CASE("batches in order are applied one after the other", "[kv-events]") {
    sequence_tracker t = at(3);
    CHECK(t.last() == 3);
    const auto s = t.next(4);
    CHECK(s.what == action::apply);
    CHECK_FALSE(s.cache_lost);
}

TEST_CASE("a gap the replay fills is caught up, then the stream goes on", "[kv-events]") {
    sequence_tracker t = at(4);
    const auto s = t.next(7);
    CHECK(s.what == action::catch_up);
    CHECK(s.from == 5);
    CHECK(s.upto == 7);
    CHECK_FALSE(s.from_start);
    CHECK_FALSE(s.cache_lost);
    t.done(7, 6); // 5 and 6 replayed, 7 applied
    CHECK(t.last() == 7);
    CHECK(t.next(8).what == action::apply);
}

TEST_CASE("a gap resynced from a dump that reaches past it skips what the dump covered",
          "[kv-events]") {
    sequence_tracker t = at(4);
    REQUIRE(t.next(7).what == action::catch_up);
    t.done(7, 9); // the dump (and replay after it) reflect batches up to 9
    CHECK(t.last() == 9);
    CHECK(t.next(8).what == action::skip); // queued on the live socket meanwhile
    CHECK(t.next(9).what == action::skip);
    CHECK(t.next(10).what == action::apply);
}

TEST_CASE("a gap nothing can fill leaves the batch in hand applied and the stream followed",
          "[kv-events]") {
    sequence_tracker t = at(4);
    REQUIRE(t.next(9).what == action::catch_up);
    t.done(9, std::nullopt);
    CHECK(t.last() == 9);
    CHECK(t.next(10).what == action::apply);
}

TEST_CASE("a stream that starts again is a new cache", "[kv-events]") {
    sequence_tracker t = at(10);
    const auto zero = t.next(0);
    CHECK(zero.what == action::restart);
    CHECK(zero.from_start);
    CHECK(zero.cache_lost);

    sequence_tracker u = at(10);
    const auto early = u.next(3); // restarted, and batches 0..2 went by unseen
    CHECK(early.what == action::catch_up);
    CHECK(early.from == 0);
    CHECK(early.upto == 3);
    CHECK(early.from_start);
    CHECK(early.cache_lost);
}

TEST_CASE("a router that joins a running stream catches up from batch 0", "[kv-events]") {
    sequence_tracker t;
    t.joined(std::nullopt); // no replay from 0 and no dump on joining
    const auto s = t.next(5);
    CHECK(s.what == action::catch_up);
    CHECK(s.from == 0);
    CHECK(s.upto == 5);
    CHECK(s.from_start);
    CHECK_FALSE(s.cache_lost); // nothing was known of an older cache
    CHECK_FALSE(t.last());
}

TEST_CASE("after a join by dump, covered batches are skipped but a batch 0 is a restart",
          "[kv-events]") {
    sequence_tracker t;
    t.joined(20);
    CHECK(t.last() == 20);
    CHECK(t.next(15).what == action::skip);
    CHECK(t.next(20).what == action::skip);
    CHECK(t.next(21).what == action::apply);
    t.done(21, std::nullopt);

    sequence_tracker u;
    u.joined(20);
    const auto s = u.next(0);
    CHECK(s.what == action::restart);
    CHECK(s.cache_lost);
}
