// One connection of the HTTP server: reading requests, limits and deadlines, the 500 of a
// failed handler, the client-closed watch.
#include "common/http/session.hpp"

#include "tests/unit/common/http/test_servers.hpp"

#include <catch2/catch.hpp>

using namespace lanes::common;
using namespace lanes::common::http::test;

TEST_CASE("session reads requests on a keep-alive connection, whole or in pieces", "[http]") {
    test_server ts({});
    SECTION("two requests on one keep-alive connection") {
        const std::string req = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
        const std::string last = "GET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        const std::string out = raw_exchange(ts.port, req + last);
        std::size_t count = 0;
        for (std::size_t pos = 0; (pos = out.find("HTTP/1.1 200", pos)) != std::string::npos; ++pos)
            ++count;
        CHECK(count == 2);
    }
    SECTION("a request whose header and body arrive apart, then a whole one") {
        // The first request's bytes come in three writes (part of the header, the rest, then the
        // body), so the server must go on reading after what it had buffered; the second comes
        // whole and is parsed from the buffer alone.
        asio::io_context io;
        asio::ip::tcp::socket sock(io);
        sock.connect({asio::ip::make_address("127.0.0.1"), ts.port});
        for (const std::string piece :
             {"POST /echo HTTP/1.1\r\nHost: x\r\nConte", "nt-Length: 5\r\n\r\n", "hello"}) {
            asio::write(sock, asio::buffer(piece));
            std::this_thread::sleep_for(30ms);
        }
        const std::string whole =
            "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n\r\nbye";
        asio::write(sock, asio::buffer(whole));
        std::string out;
        boost::system::error_code ec;
        char buf[4096];
        for (;;) {
            const std::size_t n = sock.read_some(asio::buffer(buf), ec);
            if (ec || n == 0)
                break;
            out.append(buf, n);
        }
        const auto second = out.find("HTTP/1.1 200", 1);
        REQUIRE(second != std::string::npos);
        CHECK(out.substr(0, second).ends_with("\r\n\r\nhello"));
        CHECK(out.ends_with("\r\n\r\nbye"));
    }
}

TEST_CASE("a throwing handler gets a 500 worded by the server's error writer", "[http]") {
    test_server ts({});
    const auto r = fetch_sync(ts.port, bhttp::verb::get, "/throw");
    CHECK(r.status == 500);
    CHECK(r.content_type == "application/json");
    CHECK(r.body == "{\"status\":500,\"message\":\"internal error\"}");
    CHECK(fetch_sync(ts.port, bhttp::verb::get, "/ok").status == 200); // and keeps serving
}

TEST_CASE("server enforces header and body limits with 431 and 413", "[http]") {
    http::server_config cfg;
    cfg.header_limit = 1024;
    cfg.body_limit = 2048;
    test_server ts(cfg);
    http::fetch_options big_header;
    big_header.headers = {{"x-big", std::string(2000, 'a')}};
    CHECK(fetch_sync(ts.port, bhttp::verb::get, "/", big_header).status == 431);
    http::fetch_options big_body;
    big_body.body = std::string(4096, 'b');
    CHECK(fetch_sync(ts.port, bhttp::verb::post, "/", big_body).status == 413);
    // Chunked upload over the limit (no Content-Length up front).
    const std::string chunked = "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                                "1000\r\n" +
                                std::string(4096, 'c') + "\r\n0\r\n\r\n";
    CHECK(raw_exchange(ts.port, chunked).starts_with("HTTP/1.1 413"));
    const std::string garbage = raw_exchange(ts.port, "garbage\r\n\r\n");
    CHECK(garbage.starts_with("HTTP/1.1 400"));
    CHECK(garbage.find("{\"status\":400,") != std::string::npos); // the error writer's words
    CHECK(fetch_sync(ts.port, bhttp::verb::get, "/").status == 200);
}

TEST_CASE("server closes connections that stall in the header", "[http]") {
    http::server_config cfg;
    cfg.header_read_timeout = 200ms;
    test_server ts(cfg);
    const auto start = std::chrono::steady_clock::now();
    const std::string out = raw_exchange(ts.port, "GET / HTTP/1.1\r\nHost: x\r\n"); // no blank line
    const auto waited = std::chrono::steady_clock::now() - start;
    CHECK(out.empty());
    CHECK(waited < 1900ms); // closed by the server's deadline, not by our 2 s read timeout
}

TEST_CASE("server keeps a busy keep-alive connection and closes an idle one", "[http]") {
    http::server_config cfg;
    cfg.idle_timeout = 300ms;
    test_server ts(cfg);
    asio::io_context io;
    asio::ip::tcp::socket sock(io);
    sock.connect({asio::ip::make_address("127.0.0.1"), ts.port});
    struct timeval tv {
        3, 0
    }; // a server that never closes fails the test instead of hanging it
    setsockopt(sock.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    const std::string req = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
    char buf[4096];
    boost::system::error_code ec;
    // Six requests 150 ms apart: 900 ms in all, three idle timeouts, but never 300 ms idle.
    for (int i = 0; i < 6; ++i) {
        asio::write(sock, asio::buffer(req), ec);
        REQUIRE(!ec);
        const std::size_t n = sock.read_some(asio::buffer(buf), ec);
        REQUIRE(!ec);
        CHECK(std::string_view(buf, n).starts_with("HTTP/1.1 200"));
        std::this_thread::sleep_for(150ms);
    }
    // Then idle: the server closes within about its timeout.
    const auto start = std::chrono::steady_clock::now();
    sock.read_some(asio::buffer(buf), ec);
    const auto waited = std::chrono::steady_clock::now() - start;
    CHECK(ec == asio::error::eof);
    CHECK(waited < 1000ms);
}

TEST_CASE("a handler hears of its client leaving, with the watch delayed or not", "[http]") {
    http::server_config cfg;
    SECTION("delayed (the default)") {
        cfg.client_watch_delay = 10ms;
    }
    SECTION("at once") {
        cfg.client_watch_delay = 0ms;
    }
    test_server ts(cfg);
    {
        asio::io_context io;
        asio::ip::tcp::socket s(io);
        s.connect({asio::ip::make_address("127.0.0.1"), ts.port});
        asio::write(s, asio::buffer(std::string("GET /watch HTTP/1.1\r\nHost: t\r\n\r\n")));
        std::this_thread::sleep_for(50ms); // the handler is waiting by now
        CHECK(ts.client_left.load() == 0);
        s.close();
    }
    // The watch is armed 10-20 ms after the request at most, then the close is seen at once; the
    // handler's own timer would end it after 3 s.
    const auto start = std::chrono::steady_clock::now();
    while (ts.client_left.load() == 0 && std::chrono::steady_clock::now() - start < 2s)
        std::this_thread::sleep_for(5ms);
    CHECK(ts.client_left.load() == 1);
}
