// The upstream client against a lanes server and canned answers: framing, cut bodies, deadlines,
// reuse.
#include "common/http/client.hpp"

#include "tests/unit/common/http/test_servers.hpp"

#include <catch2/catch.hpp>

using namespace lanes::common;
using namespace lanes::common::http::test;

TEST_CASE("client reads a chunked stream chunk by chunk", "[http]") {
    test_server ts({});
    {
        asio::io_context io;
        std::vector<std::string> pieces;
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                http::client_connection c(io.get_executor());
                co_await connect_and_get(c, ts.port, "/stream");
                auto ec = co_await c.read_header(2s);
                REQUIRE(!ec);
                std::string piece;
                while (!c.done()) {
                    ec = co_await c.read_chunk(piece, 2s);
                    REQUIRE(!ec);
                    if (!piece.empty())
                        pieces.push_back(piece);
                }
                CHECK(c.reusable());
            },
            asio::detached);
        io.run();
        std::string all;
        for (const auto& p : pieces)
            all += p;
        CHECK(all == "data: 0\n\ndata: 1\n\ndata: 2\n\n");
    }
}

TEST_CASE("client reads a body that runs to the close, and reports cut ones", "[http]") {
    SECTION("no Content-Length, no chunking: the body ends at the close") {
        const auto r =
            fetch_canned("HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nto the end");
        CHECK(!r.ec);
        CHECK(r.status == 200);
        CHECK(r.body == "to the end");
    }
    SECTION("a Content-Length body cut short is an error") {
        const auto r = fetch_canned("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
        CHECK(r.ec == bhttp::error::partial_message);
    }
    SECTION("a close before any byte of the answer") {
        const auto r = fetch_canned("");
        CHECK(r.ec == bhttp::error::end_of_stream);
    }
    SECTION("a header cut short") {
        const auto r = fetch_canned("HTTP/1.1 200 OK\r\nContent-Le");
        CHECK(r.ec == bhttp::error::partial_message);
    }
    SECTION("a chunked body is decoded, trailers dropped") {
        const auto r = fetch_canned("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                    "3\r\nabc\r\n2;x=y\r\nde\r\n0\r\nx-t: 1\r\n\r\n");
        CHECK(!r.ec);
        CHECK(r.body == "abcde");
    }
    SECTION("a chunked body cut short is an error") {
        const auto r = fetch_canned("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nab");
        CHECK(r.ec == bhttp::error::partial_message);
    }
    SECTION("an interim 100 Continue is skipped") {
        const auto r =
            fetch_canned("HTTP/1.1 100 Continue\r\n\r\n"
                         "HTTP/1.1 201 Created\r\nContent-Length: 2\r\nX-A: b\r\n\r\nok");
        CHECK(!r.ec);
        CHECK(r.status == 201);
        CHECK(r.body == "ok");
        REQUIRE(r.headers.size() == 2);
        CHECK(r.headers[1] == std::pair<std::string, std::string>{"X-A", "b"});
    }
    SECTION("a malformed header is an error") {
        const auto r = fetch_canned("HTTP/1.1 200 OK\r\nbad field\r\n\r\n");
        CHECK(r.ec == bhttp::error::bad_field);
    }
}

TEST_CASE("client deadlines: first byte and stream idle", "[http]") {
    // Results are checked outside the coroutines: a co_await inside a Catch assertion (a try
    // block) is not allowed, and GCC 12 does not always say so.
    SECTION("a server that never answers: read_header times out") {
        canned_server cs("", 1200ms);
        const http::url target{"127.0.0.1", cs.port(), ""};
        boost::system::error_code connected, written, ec;
        std::chrono::steady_clock::duration waited{};
        run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<void> {
            http::client_connection c(ex);
            connected = co_await c.connect(target, 2s);
            http::outgoing_request req{bhttp::verb::get, "/", 11};
            written = co_await c.write(req, 2s);
            const auto start = std::chrono::steady_clock::now();
            ec = co_await c.read_header(200ms);
            waited = std::chrono::steady_clock::now() - start;
        });
        REQUIRE(!connected);
        REQUIRE(!written);
        CHECK(ec == boost::beast::error::timeout);
        CHECK(waited >= 200ms);
        CHECK(waited < 1100ms);
    }
    SECTION("a stream that stalls after a chunk: each read waits at most the idle timeout") {
        canned_server cs("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                         "Transfer-Encoding: chunked\r\n\r\n6\r\ndata: \r\n",
                         1200ms);
        const http::url target{"127.0.0.1", cs.port(), ""};
        boost::system::error_code connected, written, header, first, second;
        bool chunked = false;
        std::string_view piece;
        std::chrono::steady_clock::duration waited{};
        run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<void> {
            http::client_connection c(ex);
            connected = co_await c.connect(target, 2s);
            http::outgoing_request req{bhttp::verb::get, "/", 11};
            written = co_await c.write(req, 2s);
            header = co_await c.read_header(2s);
            chunked = c.chunked();
            first = co_await c.read_framed_chunks(piece, 300ms, 1 << 20);
            const auto start = std::chrono::steady_clock::now();
            second = co_await c.read_framed_chunks(piece, 300ms, 1 << 20);
            waited = std::chrono::steady_clock::now() - start;
        });
        REQUIRE(!connected);
        REQUIRE(!written);
        REQUIRE(!header);
        CHECK(chunked);
        CHECK(!first);
        CHECK(second == boost::beast::error::timeout);
        CHECK(waited >= 300ms);
        CHECK(waited < 1100ms);
    }
}

TEST_CASE("client takes a body that came with its header without waiting", "[http]") {
    // The whole answer in one write, then the connection held open: the body is buffered with
    // the header, so reading it does not wait for the socket; the next read reports the end.
    canned_server cs("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 500ms);
    std::string piece, second;
    bool done = false;
    boost::system::error_code header, first_ec, end_ec;
    std::chrono::steady_clock::duration waited{};
    run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        http::client_connection c(ex);
        co_await connect_and_get(c, cs.port(), "/");
        header = co_await c.read_header(2s);
        const auto start = std::chrono::steady_clock::now();
        first_ec = co_await c.read_chunk(piece, 2s);
        waited = std::chrono::steady_clock::now() - start;
        done = c.done();
        end_ec = co_await c.read_chunk(second, 2s);
    });
    REQUIRE(!header);
    CHECK(!first_ec);
    CHECK(piece == "hello");
    CHECK(waited < 200ms); // the server holds the connection 500 ms: no read waited for it
    CHECK(done);
    CHECK(!end_ec);
    CHECK(second.empty());
}

TEST_CASE("client hands out framed chunks as views and keeps the connection after them", "[http]") {
    SECTION("chunks relayed as they came, then a second answer on the same connection") {
        test_server ts({});
        std::string relayed, second;
        bool reusable = false;
        run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<void> {
            http::client_connection c(ex);
            co_await connect_and_get(c, ts.port, "/framed");
            auto ec = co_await c.read_header(2s);
            REQUIRE(!ec);
            std::string_view piece;
            while (!c.done()) {
                ec = co_await c.read_framed_chunks(piece, 2s, 1 << 20);
                REQUIRE(!ec);
                relayed += piece;
            }
            reusable = c.reusable();
            // The bytes last viewed are let go before the next answer is read.
            http::outgoing_request req{bhttp::verb::get, "/stream", 11};
            ec = co_await c.write(req, 2s);
            REQUIRE(!ec);
            ec = co_await c.read_header(2s);
            REQUIRE(!ec);
            std::string decoded;
            while (!c.done()) {
                ec = co_await c.read_chunk(decoded, 2s);
                REQUIRE(!ec);
                second += decoded;
            }
        });
        CHECK(relayed == "5\r\nhello\r\n6;x=1\r\n world\r\n1\r\n!\r\n");
        CHECK(reusable);
        CHECK(second == "data: 0\n\ndata: 1\n\ndata: 2\n\n");
    }
    SECTION("the last chunk in the same read as data still viewed") {
        for (const std::string extra : {"", "EXTRA"}) {
            canned_server cs("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                             "5\r\nhello\r\n0\r\n\r\n" +
                                 extra,
                             300ms);
            std::string_view piece;
            std::string got;
            bool done = false;
            bool reusable = false;
            run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<void> {
                http::client_connection c(ex);
                co_await connect_and_get(c, cs.port(), "/");
                auto ec = co_await c.read_header(2s);
                REQUIRE(!ec);
                ec = co_await c.read_framed_chunks(piece, 2s, 1 << 20);
                REQUIRE(!ec);
                got = piece;
                done = c.done();
                reusable = c.reusable();
                c.close();
            });
            CHECK(got == "5\r\nhello\r\n");
            CHECK(done);
            CHECK(reusable == extra.empty()); // bytes past the answer are never kept
        }
    }
}

TEST_CASE("client does not keep a connection with bytes past the answer", "[http]") {
    // Five bytes more than Content-Length: kept, they would be read as the next answer.
    for (const std::string extra : {"", "EXTRA"}) {
        canned_server cs("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" + extra, 300ms);
        asio::io_context io;
        std::string body;
        bool reusable = false;
        boost::system::error_code header, read;
        asio::co_spawn(
            io,
            [&]() -> asio::awaitable<void> {
                http::client_connection c(io.get_executor());
                co_await connect_and_get(c, cs.port(), "/");
                header = co_await c.read_header(2s);
                std::string piece;
                while (!header && !read && !c.done()) {
                    read = co_await c.read_chunk(piece, 2s);
                    body += piece;
                }
                reusable = c.reusable();
                c.close();
            },
            asio::detached);
        io.run();
        REQUIRE(!header);
        REQUIRE(!read);
        CHECK(body == "hello");
        CHECK(reusable == extra.empty());
    }
}
