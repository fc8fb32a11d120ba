// The upstream client against a lanes server and canned answers: framing, cut bodies, deadlines,
// reuse.
#include "common/http/client.hpp"

#include "tests/unit/common/http/fake_writer.hpp"
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

namespace {

// Answers one GET with `parts`, each written `gap` after the one before, then holds the
// connection `hold` and closes it.
struct paced_server {
    asio::io_context io;
    asio::ip::tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
    std::thread thread;
    paced_server(std::vector<std::string> parts, std::chrono::milliseconds gap,
                 std::chrono::milliseconds hold = 0ms) {
        thread = std::thread([this, parts, gap, hold] {
            asio::ip::tcp::socket s(io);
            acceptor.accept(s);
            char buf[4096];
            boost::system::error_code ec;
            s.read_some(asio::buffer(buf), ec); // the request (small: one read)
            for (std::size_t i = 0; i < parts.size(); ++i) {
                if (i > 0)
                    std::this_thread::sleep_for(gap);
                asio::write(s, asio::buffer(parts[i]), ec);
            }
            std::this_thread::sleep_for(hold);
            s.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
        });
    }
    unsigned short port() const { return acceptor.local_endpoint().port(); }
    ~paced_server() { thread.join(); }
};

const std::string chunked_head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                                 "Transfer-Encoding: chunked\r\n\r\n";

// What a relay does with the pump: pumps, sends what the client did not take, pumps again,
// until the body ends or something settles it otherwise.
struct pumped {
    std::vector<http::client_connection::pump_result> results; // each pump's
    std::vector<std::string> rests;
    bool done = false;
    bool reusable = false;
};

pumped pump_all(unsigned short port, fake_writer& w, std::chrono::milliseconds idle) {
    pumped out;
    run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        http::client_connection c(ex);
        co_await connect_and_get(c, port, "/");
        const auto ec = co_await c.read_header(2s);
        REQUIRE(!ec);
        REQUIRE(c.chunked());
        REQUIRE(c.pumpable());
        while (!c.done()) {
            auto r = co_await c.pump_framed_chunks(w, idle, 1 << 20);
            out.results.push_back(r);
            out.rests.emplace_back(r.rest);
            if (r.ec || r.client_gone)
                break;
            if (!r.rest.empty())
                co_await w.write_framed(r.rest);
        }
        out.done = c.done();
        out.reusable = c.reusable();
        c.close();
    });
    return out;
}

} // namespace

TEST_CASE("client pump relays whole chunks as they come and settles only when it must", "[http]") {
    const std::vector<std::string> parts = {chunked_head + "5\r\nhello\r\n", "6;x=1\r\n world\r\n",
                                            "1\r\n!\r\n0\r\n\r\n"};
    const std::string relayed = "5\r\nhello\r\n6;x=1\r\n world\r\n1\r\n!\r\n";
    SECTION("a client that takes every chunk: one pump for the whole body") {
        paced_server ps(parts, 50ms, 300ms);
        fake_writer w;
        w.takes_now = 1 << 20;
        const auto p = pump_all(ps.port(), w, 2s);
        REQUIRE(p.results.size() == 1);
        CHECK(!p.results[0].ec);
        CHECK(!p.results[0].client_gone);
        CHECK(p.rests[0].empty());
        CHECK(p.done);
        CHECK(p.reusable);
        CHECK(w.body == relayed);
        // Each read's whole chunks as one write, byte for byte: every write ends where a chunk
        // does (parts that came apart are written apart; 50 ms apart, they do).
        std::size_t at = 0;
        for (const auto& write : w.writes) {
            at += write.size();
            CHECK((at == 10 || at == 25 || at == relayed.size())); // 10, 15 and 6 bytes
        }
        CHECK(w.writes.size() == 3);
    }
    SECTION("a client that takes part: the rest comes back to be sent, then pumping goes on") {
        paced_server ps(parts, 50ms, 300ms);
        fake_writer w;
        w.takes_now = 4;
        const auto p = pump_all(ps.port(), w, 2s);
        CHECK(p.done);
        CHECK(w.body == relayed);
        REQUIRE(p.results.size() == 3);
        CHECK(p.rests[0] == "ello\r\n"); // of "5\r\nhello\r\n", 4 bytes taken at once
        CHECK(p.rests[1] == "1\r\n world\r\n");
        CHECK(p.rests[2] == "\r\n");
    }
    SECTION("a client that leaves: the pump says so") {
        paced_server ps(parts, 50ms, 300ms);
        fake_writer w;
        w.takes_now = 1 << 20;
        w.leave_after_writes = 1;
        const auto p = pump_all(ps.port(), w, 2s);
        REQUIRE(p.results.size() == 1);
        CHECK(p.results[0].client_gone);
        CHECK(w.body == "5\r\nhello\r\n");
    }
    SECTION("a stream cut short, broken framing, a stall") {
        fake_writer w;
        w.takes_now = 1 << 20;
        {
            paced_server ps({chunked_head + "5\r\nhello\r\n"}, 0ms);
            const auto p = pump_all(ps.port(), w, 2s);
            REQUIRE(p.results.size() == 1);
            CHECK(p.results[0].ec == boost::beast::http::error::partial_message);
            CHECK(w.body == "5\r\nhello\r\n");
            CHECK(!p.reusable);
        }
        {
            paced_server ps({chunked_head + "5\r\nhello\r\n", "zz\r\n"}, 30ms, 300ms);
            const auto p = pump_all(ps.port(), w, 2s);
            REQUIRE(p.results.size() == 1);
            CHECK(p.results[0].ec == boost::beast::http::error::bad_chunk);
        }
        {
            paced_server ps({chunked_head + "5\r\nhello\r\n"}, 0ms, 1200ms);
            const auto start = std::chrono::steady_clock::now();
            const auto p = pump_all(ps.port(), w, 300ms);
            const auto waited = std::chrono::steady_clock::now() - start;
            REQUIRE(p.results.size() == 1);
            CHECK(p.results[0].ec == boost::beast::error::timeout);
            CHECK(waited >= 300ms);
            CHECK(waited < 1100ms);
        }
    }
}
