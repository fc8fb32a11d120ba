// The lazily re-armed read deadline: an expiry cancels the read in progress and reads as Beast's
// timeout; a read that ended, or a deadline moved later, is not cancelled; an earlier deadline
// re-arms the timer; release() lets the io_context finish at once, and so does a move to another
// io_context for the one left behind.
#include "common/http/io/read_deadline.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <string>

using namespace lanes::common;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

// Two ends of one loopback connection.
struct socket_pair {
    explicit socket_pair(asio::io_context& io)
        : near(io)
        , far(io) {
        tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
        near.connect(acceptor.local_endpoint());
        acceptor.accept(far);
    }
    tcp::socket near, far;
};

// One read on `socket`, its outcome as the deadline reports it.
struct pending_read {
    bool finished = false;
    error_code raw; // as the socket ended it
    error_code ec;  // through deadline.result()
    std::string bytes;
    clock_type::time_point ended{};
    std::array<char, 64> buf{};

    void start(tcp::socket& socket, const http::read_deadline& deadline) {
        socket.async_read_some(asio::buffer(buf), [this, &deadline](error_code e, std::size_t n) {
            finished = true;
            raw = e;
            ec = deadline.result(e);
            bytes.assign(buf.data(), n);
            ended = clock_type::now();
        });
    }
};

// Writes `text` to `socket` after `delay`.
void write_later(asio::steady_timer& timer, tcp::socket& socket, const std::string& text,
                 std::chrono::milliseconds delay) {
    timer.expires_after(delay);
    timer.async_wait([&socket, text](error_code) { asio::write(socket, asio::buffer(text)); });
}

// Runs `io` until `done()` or `bound` passed, whichever comes first; returns done().
template <class Pred>
bool run_until(asio::io_context& io, Pred done, std::chrono::milliseconds bound) {
    const auto end = clock_type::now() + bound;
    while (!done() && clock_type::now() < end) {
        io.restart();
        io.run_one_for(10ms);
    }
    return done();
}

} // namespace

TEST_CASE("an expired read deadline cancels the read and reads as a timeout", "[http]") {
    asio::io_context io(1);
    socket_pair s(io);
    http::read_deadline deadline;
    const auto began = clock_type::now();
    deadline.start(s.near, 30ms);
    pending_read read;
    read.start(s.near, deadline);
    io.run_for(5s); // returns once the read ended and the timer has nothing left
    REQUIRE(read.finished);
    CHECK(read.raw == asio::error::operation_aborted);
    CHECK(read.ec == boost::beast::error::timeout);
    CHECK(deadline.fired());
    CHECK(read.ended - began >= 30ms);
    CHECK(read.ended - began < 3s);
    CHECK(s.near.is_open()); // cancelled, not closed

    // The next start() begins a new read: not fired until its own deadline passes.
    deadline.start(s.near, 10s);
    CHECK_FALSE(deadline.fired());
    CHECK(deadline.result(asio::error::operation_aborted) == asio::error::operation_aborted);
    deadline.release();
}

TEST_CASE("a read deadline stopped before its expiry cancels nothing", "[http]") {
    asio::io_context io(1);
    socket_pair s(io);
    http::read_deadline deadline;
    deadline.start(s.near, 20ms);
    deadline.stop(); // the read it was for ended; the timer still wakes at 20 ms
    pending_read read;
    read.start(s.near, deadline); // a read with no deadline of its own
    asio::steady_timer later(io);
    write_later(later, s.far, "after", 150ms);
    io.run_for(5s);
    REQUIRE(read.finished);
    CHECK_FALSE(read.raw);
    CHECK(read.bytes == "after");
    CHECK_FALSE(deadline.fired());
}

TEST_CASE("a read deadline moved later is honoured, one moved earlier re-arms", "[http]") {
    asio::io_context io(1);
    socket_pair s(io);
    http::read_deadline deadline;
    SECTION("later: the first wait wakes, finds time left and sleeps again") {
        deadline.start(s.near, 30ms);
        deadline.start(s.near, 3s); // the same read, now with more time
        pending_read read;
        read.start(s.near, deadline);
        asio::steady_timer later(io);
        write_later(later, s.far, "in time", 200ms); // past the first 30 ms
        io.run_for(100ms);
        CHECK_FALSE(read.finished);
        REQUIRE(run_until(
            io, [&] { return read.finished; }, 2s));
        CHECK_FALSE(read.raw);
        CHECK(read.bytes == "in time");
        CHECK_FALSE(deadline.fired());
        deadline.release();
    }
    SECTION("earlier: the read ends by the new deadline, not the old one") {
        const auto began = clock_type::now();
        deadline.start(s.near, 30s);
        deadline.start(s.near, 30ms);
        pending_read read;
        read.start(s.near, deadline);
        io.run_for(5s);
        REQUIRE(read.finished);
        CHECK(read.ec == boost::beast::error::timeout);
        CHECK(read.ended - began < 3s);
        // The 30 s wait was replaced: nothing is left to run.
        CHECK(io.stopped());
    }
}

TEST_CASE("release cancels the timer so the io_context need not wait for it", "[http]") {
    asio::io_context io(1);
    socket_pair s(io);
    http::read_deadline deadline;
    deadline.start(s.near, 30s);
    deadline.release();
    const auto began = clock_type::now();
    io.run_for(5s);
    CHECK(io.stopped());
    CHECK(clock_type::now() - began < 3s);
    CHECK_FALSE(deadline.fired());
    deadline.release(); // again: nothing to do
}

// A connection moved to another thread's io_context leaves its old timer behind: its wait must
// end then, not at its deadline (minutes), or every move would hold one until then.
TEST_CASE("a deadline that moves to another io_context cancels the old timer's wait", "[http]") {
    asio::io_context old_io(1), new_io(1);
    socket_pair on_old(old_io), on_new(new_io);
    http::read_deadline deadline;
    deadline.start(on_old.near, 1h);
    deadline.stop();
    deadline.start(on_new.near, 1h); // the socket is another one now, on another executor
    deadline.stop();
    auto began = clock_type::now();
    old_io.run_for(5s);
    CHECK(old_io.stopped());
    CHECK(clock_type::now() - began < 3s);

    deadline.abandon(); // as client_connection::rebind does
    began = clock_type::now();
    new_io.run_for(5s);
    CHECK(new_io.stopped());
    CHECK(clock_type::now() - began < 3s);
    deadline.abandon(); // again: nothing to do
}

TEST_CASE("result passes other errors through, and everything before any start", "[http]") {
    http::read_deadline unused;
    CHECK_FALSE(unused.fired());
    CHECK(unused.result({}) == error_code{});
    CHECK(unused.result(asio::error::operation_aborted) == asio::error::operation_aborted);
    CHECK(unused.result(asio::error::eof) == asio::error::eof);

    asio::io_context io(1);
    socket_pair s(io);
    http::read_deadline deadline;
    deadline.start(s.near, 1ms);
    pending_read read;
    read.start(s.near, deadline);
    io.run_for(5s);
    REQUIRE(deadline.fired());
    // Fired: only a cancellation becomes a timeout.
    CHECK(deadline.result(asio::error::operation_aborted) == boost::beast::error::timeout);
    CHECK(deadline.result(asio::error::eof) == asio::error::eof);
    CHECK(deadline.result(asio::error::connection_reset) == asio::error::connection_reset);
    CHECK(deadline.result({}) == error_code{});
}
