// The admission queue on one io_context: a cap per model, turns between clients, priorities
// within one, the bounded queue and wait, a client that leaves, and room that appears unannounced.
#include "router/access/admission.hpp"

#include <boost/asio.hpp>
#include <catch2/catch.hpp>

#include <atomic>
#include <optional>
#include <string>
#include <vector>

using namespace lanes;
using router::admission;
using router::admission_outcome;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

// One request through the gate: its outcome, and its ticket held until `release` is called.
struct entry {
    std::string name;
    std::optional<admission_outcome> outcome;
    admission::ticket ticket;
    std::shared_ptr<admission::waiter> waiter;
};

void start(asio::io_context& io, admission& gate, entry& e, admission::request_info info,
           std::vector<std::string>& order) {
    asio::co_spawn(
        io,
        [&gate, &e, &order, info]() -> asio::awaitable<void> {
            e.outcome = co_await gate.enter(info, e.ticket, e.waiter);
            if (*e.outcome == admission_outcome::admitted)
                order.push_back(e.name);
        },
        asio::detached);
}

void run_a_little(asio::io_context& io) {
    io.restart();
    io.run_for(50ms);
}

router::admission_settings capped(std::size_t max_concurrent, std::size_t queue = 100) {
    router::admission_settings s;
    s.max_concurrent = max_concurrent;
    s.queue_size = queue;
    s.queue_timeout = 10s;
    s.recheck = 5ms;
    return s;
}

} // namespace

TEST_CASE("admission: a cap per model, and the clients' queues take turns", "[admission]") {
    asio::io_context io;
    admission gate(capped(1), [](const std::string&, const std::string&) { return SIZE_MAX; });
    REQUIRE(gate.enabled());
    std::vector<std::string> order;
    std::vector<entry> e(6);
    const char* names[] = {"first", "a1", "a2", "a3", "b1", "other-model"};
    for (int i = 0; i < 6; ++i)
        e[i].name = names[i];
    start(io, gate, e[0], {"m", "a", 0}, order);
    run_a_little(io);
    start(io, gate, e[1], {"m", "a", 0}, order);
    start(io, gate, e[2], {"m", "a", 0}, order);
    start(io, gate, e[3], {"m", "a", 0}, order);
    start(io, gate, e[4], {"m", "b", 0}, order);
    start(io, gate, e[5], {"n", "a", 0}, order); // another model has its own cap
    run_a_little(io);
    CHECK(order == std::vector<std::string>{"first", "other-model"});
    CHECK(gate.waiting() == 4);
    // Each release lets the next one in: client b's single request does not wait behind all of
    // a's.
    for (int i : {0, 1, 4, 2}) {
        e[i].ticket = {};
        run_a_little(io);
    }
    CHECK(order == std::vector<std::string>{"first", "other-model", "a1", "b1", "a2", "a3"});
    CHECK(gate.waiting() == 0);
}

TEST_CASE("admission: lower priority values first within a client", "[admission]") {
    asio::io_context io;
    admission gate(capped(1), [](const std::string&, const std::string&) { return SIZE_MAX; });
    std::vector<std::string> order;
    std::vector<entry> e(4);
    e[0].name = "holder";
    start(io, gate, e[0], {"m", "a", 0}, order);
    run_a_little(io);
    e[1].name = "late";
    e[2].name = "urgent";
    e[3].name = "normal";
    start(io, gate, e[1], {"m", "a", 5}, order);
    start(io, gate, e[2], {"m", "a", -1}, order);
    start(io, gate, e[3], {"m", "a", 0}, order);
    run_a_little(io);
    for (int i : {0, 2, 3}) {
        e[i].ticket = {};
        run_a_little(io);
    }
    CHECK(order == std::vector<std::string>{"holder", "urgent", "normal", "late"});
}

TEST_CASE("admission: a full queue refuses at once, a wait ends at its timeout", "[admission]") {
    asio::io_context io;
    auto s = capped(1, 1);
    s.queue_timeout = 100ms;
    admission gate(s, [](const std::string&, const std::string&) { return SIZE_MAX; });
    std::vector<std::string> order;
    std::vector<entry> e(3);
    start(io, gate, e[0], {"m", "a", 0}, order);
    start(io, gate, e[1], {"m", "a", 0}, order);
    start(io, gate, e[2], {"m", "b", 0}, order);
    run_a_little(io);
    CHECK(e[0].outcome == admission_outcome::admitted);
    CHECK_FALSE(e[1].outcome);
    CHECK(e[2].outcome == admission_outcome::queue_full);
    io.restart();
    io.run_for(300ms);
    CHECK(e[1].outcome == admission_outcome::timed_out);
    CHECK(gate.waiting() == 0);
}

TEST_CASE("admission: a cap per client keeps room in the queue for the others", "[admission]") {
    asio::io_context io;
    auto s = capped(1, 10);
    s.queue_per_client = 2;
    admission gate(s, [](const std::string&, const std::string&) { return SIZE_MAX; });
    std::vector<std::string> order;
    std::vector<entry> e(6);
    for (int i = 0; i < 5; ++i)
        start(io, gate, e[i], {"m", "a", 0}, order); // one in, two wait, two refused
    start(io, gate, e[5], {"m", "b", 0}, order);
    run_a_little(io);
    CHECK(e[0].outcome == admission_outcome::admitted);
    CHECK_FALSE(e[1].outcome);
    CHECK_FALSE(e[2].outcome);
    CHECK(e[3].outcome == admission_outcome::queue_full);
    CHECK(e[4].outcome == admission_outcome::queue_full);
    CHECK_FALSE(e[5].outcome); // b's request found room in the queue
    CHECK(gate.waiting() == 3);
    e[0].ticket = {};
    run_a_little(io);
    e[1].ticket = {};
    run_a_little(io);
    CHECK(order.size() == 3);
    CHECK(e[5].outcome == admission_outcome::admitted);
}

TEST_CASE("admission: a client that leaves is dropped from the queue", "[admission]") {
    asio::io_context io;
    admission gate(capped(1), [](const std::string&, const std::string&) { return SIZE_MAX; });
    std::vector<std::string> order;
    std::vector<entry> e(3);
    e[2].name = "stayed";
    start(io, gate, e[0], {"m", "a", 0}, order);
    start(io, gate, e[1], {"m", "a", 0}, order);
    start(io, gate, e[2], {"m", "a", 0}, order);
    run_a_little(io);
    REQUIRE(e[1].waiter);
    admission::client_left(e[1].waiter);
    run_a_little(io);
    CHECK(e[1].outcome == admission_outcome::client_gone);
    CHECK(gate.waiting() == 1);
    e[0].ticket = {};
    run_a_little(io);
    CHECK(e[2].outcome == admission_outcome::admitted);
}

TEST_CASE("admission: replica room, reserved until routed, and room found by recheck",
          "[admission]") {
    asio::io_context io;
    std::atomic<std::size_t> room{2};
    router::admission_settings s = capped(0);
    s.replica_caps = true;
    admission gate(s, [&room](const std::string&, const std::string&) { return room.load(); });
    std::vector<std::string> order;
    std::vector<entry> e(4);
    for (int i = 0; i < 4; ++i) {
        e[i].name = "r" + std::to_string(i);
        start(io, gate, e[i], {"m", "c" + std::to_string(i), 0}, order);
    }
    run_a_little(io);
    // Two slots: two let in, held by their reservations until they are routed.
    CHECK(order.size() == 2);
    // Routed: the replicas' own counts now hold the room (the test's `room` says so).
    room = 0;
    e[0].ticket.routed();
    e[1].ticket.routed();
    run_a_little(io);
    CHECK(order.size() == 2);
    // A replica frees up without any ticket released (its engine's queue drained): the recheck
    // finds it.
    room = 1;
    run_a_little(io);
    CHECK(order.size() == 3);
    CHECK(gate.waiting() == 1);
}

TEST_CASE("admission without caps lets everything through untracked", "[admission]") {
    asio::io_context io;
    admission gate(router::admission_settings{},
                   [](const std::string&, const std::string&) { return std::size_t{0}; });
    CHECK_FALSE(gate.enabled());
    std::vector<std::string> order;
    std::vector<entry> e(50);
    for (auto& x : e)
        start(io, gate, x, {"m", "a", 0}, order);
    run_a_little(io);
    CHECK(order.size() == 50);
}

TEST_CASE("admission: a waiter holds out for its preferred replica, then takes any",
          "[admission]") {
    asio::io_context io;
    std::atomic<std::size_t> free_a{0}, free_b{1};
    router::admission_settings s = capped(0);
    s.replica_caps = true;
    s.affinity_wait = 200ms;
    admission gate(s, [&](const std::string&, const std::string& replica) -> std::size_t {
        if (replica == "a")
            return free_a.load();
        if (replica == "b")
            return free_b.load();
        return free_a.load() + free_b.load();
    });
    std::vector<std::string> order;
    std::vector<entry> e(2);
    e[0].name = "wants-a";
    e[1].name = "wants-b";
    start(io, gate, e[0], {"m", "c1", 0, "a"}, order);
    run_a_little(io);
    CHECK(order.empty()); // b has room, but it wants a
    start(io, gate, e[1], {"m", "c2", 0, "b"}, order);
    run_a_little(io);
    CHECK(order == std::vector<std::string>{"wants-b"}); // the other client's turn was not lost
    free_b = 1;                                          // (b's request is routed elsewhere)
    e[1].ticket.routed();
    io.restart();
    io.run_for(400ms); // past affinity_wait: it takes b
    CHECK(order == std::vector<std::string>{"wants-b", "wants-a"});
}

TEST_CASE("admission: within a client a waiter for a full replica lets one behind it go",
          "[admission]") {
    std::atomic<std::size_t> free_a{0}, free_b{1};
    router::admission_settings s = capped(0);
    s.replica_caps = true;
    s.affinity_wait = 10s;
    const auto room = [&](const std::string&, const std::string& replica) -> std::size_t {
        if (replica == "a")
            return free_a.load();
        if (replica == "b")
            return free_b.load();
        return free_a.load() + free_b.load();
    };
    {
        asio::io_context io; // one each: a waiter left at the end must not outlive its gate
        admission gate(s, room);
        std::vector<std::string> order;
        std::vector<entry> e(3);
        e[0].name = "wants-a";
        e[1].name = "wants-a-too";
        e[2].name = "wants-b";
        start(io, gate, e[0], {"m", "one-client", 0, "a"}, order);
        start(io, gate, e[1], {"m", "one-client", 0, "a"}, order);
        start(io, gate, e[2], {"m", "one-client", 0, "b"}, order);
        run_a_little(io);
        // b had room: its waiter went past the two that hold out for a.
        CHECK(order == std::vector<std::string>{"wants-b"});
        CHECK(gate.waiting() == 2);
        free_a = 1;
        run_a_little(io);
        CHECK(order == std::vector<std::string>{"wants-b", "wants-a"}); // then in order
    }
    {
        // --queue-scan-depth 1: strictly in order, the head holds the rest back.
        s.scan_depth = 1;
        free_a = 0;
        free_b = 1;
        asio::io_context io;
        admission gate(s, room);
        std::vector<std::string> order;
        std::vector<entry> e(2);
        e[0].name = "wants-a";
        e[1].name = "wants-b";
        start(io, gate, e[0], {"m", "one-client", 0, "a"}, order);
        start(io, gate, e[1], {"m", "one-client", 0, "b"}, order);
        run_a_little(io);
        CHECK(order.empty()); // b had room, but its waiter is behind the head
        free_a = 1;
        run_a_little(io);
        CHECK(order.size() == 2); // the head went, and then the one behind it
    }
}
