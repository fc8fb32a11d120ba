// A read started behind the ready handlers: it still gets bytes already there and bytes that
// come later, and its deadline still ends it, even one that passed before the read began.
#include "common/http/io/read_deadline.hpp"
#include "common/http/io/read_later.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/error.hpp>
#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <string>
#include <thread>

using namespace lanes::common;
namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

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

struct outcome {
    bool finished = false;
    error_code ec;
    std::string bytes;
};

asio::awaitable<void> read_once(tcp::socket& socket, http::read_deadline* deadline, outcome& out) {
    std::array<char, 64> buf{};
    auto [ec, n] = co_await http::read_some_later(socket, asio::buffer(buf), deadline);
    out.ec = deadline ? deadline->result(ec) : ec;
    out.bytes.assign(buf.data(), n);
    out.finished = true;
}

// Runs `io` until the read is over (2 s at most) and checks how it ended.
void expect_read(asio::io_context& io, const outcome& out, error_code ec,
                 const std::string& bytes) {
    io.run_for(2s);
    REQUIRE(out.finished);
    CHECK(out.ec == ec);
    CHECK(out.bytes == bytes);
}

} // namespace

TEST_CASE("a later read gets bytes that were already there", "[http]") {
    asio::io_context io(1);
    socket_pair s(io);
    asio::write(s.far, asio::buffer(std::string("ready")));
    outcome out;
    asio::co_spawn(io, read_once(s.near, nullptr, out), asio::detached);
    expect_read(io, out, {}, "ready");
}

TEST_CASE("a later read waits for bytes that come after it started", "[http]") {
    asio::io_context io(1);
    socket_pair s(io);
    outcome out;
    asio::co_spawn(io, read_once(s.near, nullptr, out), asio::detached);
    asio::steady_timer later(io, 20ms);
    later.async_wait([&](error_code) {
        CHECK(!out.finished); // nothing to read until now
        asio::write(s.far, asio::buffer(std::string("late")));
    });
    expect_read(io, out, {}, "late");
}

TEST_CASE("a later read ends by its deadline while it waits", "[http]") {
    asio::io_context io(1);
    socket_pair s(io);
    http::read_deadline deadline;
    deadline.start(s.near, 20ms);
    outcome out;
    asio::co_spawn(io, read_once(s.near, &deadline, out), asio::detached);
    expect_read(io, out, boost::beast::error::timeout, "");
}

TEST_CASE("a later read whose deadline passed before it started ends at once", "[http]") {
    asio::io_context io(1);
    socket_pair s(io);
    http::read_deadline deadline;
    deadline.start(s.near, 1ms);
    // The deadline fires with no read pending: its cancel finds nothing to stop.
    std::this_thread::sleep_for(5ms);
    io.run_for(50ms);
    REQUIRE(deadline.fired());
    outcome out;
    asio::co_spawn(io, read_once(s.near, &deadline, out), asio::detached);
    io.restart();
    // Without the check the read would wait for bytes that never come, with no timer left.
    expect_read(io, out, boost::beast::error::timeout, "");
    deadline.release();
}
