// The list that delays client-closed watches: who is armed, when, and that the timer stops.
#include "common/http/io/watch_delay.hpp"

#include <boost/asio/io_context.hpp>
#include <catch2/catch.hpp>

#include <chrono>
#include <memory>

using namespace lanes::common;
namespace asio = boost::asio;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

struct probe : http::watch_delay::waiter {
    int armed = 0;
    clock_type::time_point when{};
    void watch_now() override {
        ++armed;
        when = clock_type::now();
    }
};

} // namespace

TEST_CASE("watch delay arms only those still waiting after one to two ticks", "[http]") {
    asio::io_context io(1);
    auto list = std::make_shared<http::watch_delay>(io.get_executor(), 20ms, false);
    probe stays, leaves, twice;
    const auto start = clock_type::now();
    list->add(stays);
    list->add(leaves);
    list->add(twice);
    list->add(twice); // already waiting: no second place
    CHECK(list->waiting() == 3);
    list->remove(leaves); // answered before the delay
    list->remove(leaves); // harmless
    CHECK(list->waiting() == 2);
    list.reset(); // the pending timer keeps the list alive

    io.run(); // returns once the list is empty and its timer stopped
    CHECK(stays.armed == 1);
    CHECK(twice.armed == 1);
    CHECK(leaves.armed == 0);
    const auto waited = stays.when - start;
    CHECK(waited >= 20ms);
    CHECK(waited < 1s); // two ticks, with room for a slow machine
}

TEST_CASE("watch delay restarts its timer for a waiter that joins after it stopped", "[http]") {
    asio::io_context io(1);
    auto list = std::make_shared<http::watch_delay>(io.get_executor(), 5ms, false);
    probe first, second;
    list->add(first);
    io.run();
    CHECK(first.armed == 1);
    CHECK(list->waiting() == 0);
    io.restart();
    list->add(second);
    io.run();
    CHECK(second.armed == 1);
    CHECK(first.armed == 1);
}
