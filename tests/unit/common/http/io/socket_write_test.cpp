// Writes in two steps: write_now hands the socket what it takes at once, write_rest sends what is
// left (from any offset into the buffers) under a deadline.
#include "common/http/io/socket_write.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/error.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <catch2/catch.hpp>

#include <array>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

using namespace lanes::common;
namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using boost::system::error_code;
using namespace std::chrono_literals;

namespace {

// A plain transport connected to a plain socket over loopback.
struct stream_pair {
    explicit stream_pair(asio::io_context& io)
        : near(io.get_executor())
        , far(io) {
        tcp::acceptor acceptor(io, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
        near.socket().connect(acceptor.local_endpoint());
        acceptor.accept(far);
    }
    http::transport near;
    tcp::socket far;
};

// `n` bytes that differ from one position to the next (a misplaced byte shows).
std::string pattern(std::size_t n, char salt) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i)
        s[i] = static_cast<char>('a' + (i * 7 + static_cast<std::size_t>(salt)) % 26);
    return s;
}

// Reads exactly `n` bytes from `socket` (blocking; for bytes already sent).
std::string read_exactly(tcp::socket& socket, std::size_t n) {
    std::string out(n, '\0');
    asio::read(socket, asio::buffer(out));
    return out;
}

} // namespace

TEST_CASE("write_now leaves an unprepared socket to the asynchronous path", "[http]") {
    asio::io_context io(1);
    stream_pair s(io);
    const std::string text = "hello";
    const std::array<asio::const_buffer, 1> buffers{asio::buffer(text)};
    const auto w = http::write_now(s.near, buffers.data(), buffers.size());
    CHECK_FALSE(w.done);
    CHECK(w.written == 0);
    CHECK_FALSE(w.ec);
}

TEST_CASE("write_now writes a small head and body at once", "[http]") {
    asio::io_context io(1);
    stream_pair s(io);
    http::prepare_for_write_now(s.near);
    REQUIRE(s.near.socket().non_blocking());
    const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\n", body = "abcd";
    SECTION("two buffers") {
        const std::array<asio::const_buffer, 2> buffers{asio::buffer(head), asio::buffer(body)};
        const auto w = http::write_now(s.near, buffers.data(), buffers.size());
        CHECK(w.done);
        CHECK_FALSE(w.ec);
        CHECK(w.written == head.size() + body.size());
        CHECK(read_exactly(s.far, w.written) == head + body);
    }
    SECTION("a body copied into the head leaves an empty second buffer") {
        const std::string whole = head + body;
        const std::array<asio::const_buffer, 2> buffers{asio::buffer(whole), asio::const_buffer()};
        const auto w = http::write_now(s.near, buffers.data(), buffers.size());
        CHECK(w.done);
        CHECK(w.written == whole.size());
        CHECK(read_exactly(s.far, w.written) == whole);
    }
}

TEST_CASE("write_now takes what the socket buffer holds, write_rest sends the rest", "[http]") {
    asio::io_context io(1);
    stream_pair s(io);
    http::prepare_for_write_now(s.near);
    // Far more than loopback's socket buffers take while nobody reads.
    const std::string head = pattern(1000, 1), body = pattern(32u << 20, 2);
    const std::array<asio::const_buffer, 2> buffers{asio::buffer(head), asio::buffer(body)};
    auto w = http::write_now(s.near, buffers.data(), buffers.size());
    REQUIRE_FALSE(w.ec);
    REQUIRE_FALSE(w.done);
    CHECK(w.written > head.size()); // the head and part of the body
    CHECK(w.written < head.size() + body.size());

    std::optional<error_code> rest_ec;
    std::string received;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            rest_ec =
                co_await http::write_rest(s.near, buffers.data(), buffers.size(), w.written, 10s);
        },
        asio::detached);
    received.resize(head.size() + body.size());
    std::optional<error_code> read_ec;
    asio::async_read(s.far, asio::buffer(received),
                     [&](error_code ec, std::size_t) { read_ec = ec; });
    io.run_for(30s); // both end well before this
    REQUIRE(rest_ec);
    CHECK_FALSE(*rest_ec);
    REQUIRE(read_ec);
    CHECK_FALSE(*read_ec);
    CHECK(received.size() == head.size() + body.size());
    CHECK(received.compare(0, head.size(), head) == 0);
    CHECK(received.compare(head.size(), body.size(), body) == 0);
}

TEST_CASE("write_rest starts at any offset into the buffers", "[http]") {
    const std::string a = "abc", b = "defgh";
    const std::array<asio::const_buffer, 2> buffers{asio::buffer(a), asio::buffer(b)};
    // Bytes already written -> what the peer gets from write_rest.
    const std::array<std::pair<std::size_t, std::string>, 5> table{{
        {0, "abcdefgh"},
        {1, "bcdefgh"},
        {3, "defgh"}, // exactly the first buffer: it is skipped whole
        {4, "efgh"},
        {7, "h"},
    }};
    for (const auto& row : table) {
        const std::size_t written = row.first; // (a lambda cannot capture a binding in clang 14)
        const auto& expected = row.second;
        INFO("written " << written);
        asio::io_context io(1);
        stream_pair s(io);
        std::optional<error_code> ec;
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                ec = co_await http::write_rest(s.near, buffers.data(), buffers.size(), written, 5s);
            },
            asio::detached);
        io.run_for(10s);
        REQUIRE(ec);
        CHECK_FALSE(*ec);
        CHECK(read_exactly(s.far, expected.size()) == expected);
        // Nothing more was sent.
        s.near.socket().shutdown(tcp::socket::shutdown_send);
        std::array<char, 16> more{};
        error_code end;
        CHECK(s.far.read_some(asio::buffer(more), end) == 0);
        CHECK(end == asio::error::eof);
    }
}

TEST_CASE("write_rest ends with a timeout when the peer does not read", "[http]") {
    asio::io_context io(1);
    stream_pair s(io);
    const std::string body = pattern(64u << 20, 3);
    const std::array<asio::const_buffer, 1> buffers{asio::buffer(body)};
    std::optional<error_code> ec;
    const auto began = std::chrono::steady_clock::now();
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            ec = co_await http::write_rest(s.near, buffers.data(), buffers.size(), 0, 100ms);
        },
        asio::detached);
    io.run_for(10s);
    REQUIRE(ec);
    CHECK(*ec == beast::error::timeout);
    CHECK(std::chrono::steady_clock::now() - began < 5s);
}
