// The answer side of a connection: whole responses and streams as they go on the wire.
#include "common/http/session_writer.hpp"

#include "tests/unit/common/http/test_servers.hpp"

#include <catch2/catch.hpp>

using namespace lanes::common;
using namespace lanes::common::http::test;

TEST_CASE("whole answers: HEAD, parts, keep-alive by version", "[http]") {
    test_server ts({});
    SECTION("HEAD gets the GET header, Content-Length included, and no body") {
        // Then a GET on the same connection: its body must follow right after the HEAD header.
        const std::string head = "HEAD /h HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc";
        const std::string get =
            "GET /g HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi";
        const std::string out = raw_exchange(ts.port, head + get);
        const auto second = out.find("HTTP/1.1 200", 1);
        REQUIRE(out.starts_with("HTTP/1.1 200 OK\r\n"));
        REQUIRE(second != std::string::npos);
        const std::string first = out.substr(0, second);
        CHECK(first.find("Content-Length: 3\r\n") != std::string::npos);
        CHECK(first.ends_with("\r\n\r\n")); // the header alone
        CHECK(out.ends_with("\r\n\r\nhi"));
    }
    SECTION("a response sent from parts: exact header, keep-alive, HEAD") {
        const std::string first = "POST /parts HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
        const std::string head = "HEAD /parts HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\n{}";
        const std::string last =
            "POST /parts HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 1\r\n\r\nz";
        const std::string out = raw_exchange(ts.port, first + head + last);
        const std::string expect_first =
            "HTTP/1.1 201 Created\r\nServer: lanes\r\nContent-Type: application/json\r\n"
            "x-a: 1\r\nx-b: two\r\nContent-Length: 2\r\n\r\n{}";
        const std::string expect_head =
            "HTTP/1.1 201 Created\r\nServer: lanes\r\nContent-Type: application/json\r\n"
            "x-a: 1\r\nx-b: two\r\nContent-Length: 2\r\n\r\n";
        const std::string expect_last =
            "HTTP/1.1 201 Created\r\nServer: lanes\r\nContent-Type: application/json\r\n"
            "x-a: 1\r\nx-b: two\r\nContent-Length: 1\r\nConnection: close\r\n\r\nz";
        CHECK(out == expect_first + expect_head + expect_last);
        // HTTP/1.0 closes unless asked to keep the connection.
        const std::string v10 = raw_exchange(
            ts.port, "POST /parts HTTP/1.0\r\nConnection: keep-alive\r\nContent-Length: 0\r\n\r\n"
                     "POST /parts HTTP/1.0\r\nContent-Length: 0\r\n\r\n");
        CHECK(v10.starts_with("HTTP/1.0 201 Created\r\n"));
        CHECK(v10.find("Connection: keep-alive\r\n") != std::string::npos);
        CHECK(v10.find("HTTP/1.0 201", 1) != std::string::npos); // the second was answered
    }
}

TEST_CASE("streams: chunked to HTTP/1.1, bare bytes to HTTP/1.0, relayed chunks kept", "[http]") {
    test_server ts({});
    SECTION("a stream to an HTTP/1.0 client is bare bytes ended by the close") {
        // HTTP/1.0 has no chunked encoding: even asked to keep the connection, the server sends
        // no Transfer-Encoding and closes after the stream (the second request goes unanswered).
        const std::string get = "GET /stream HTTP/1.0\r\nConnection: keep-alive\r\n\r\n";
        const std::string out = raw_exchange(ts.port, get + get);
        REQUIRE(out.starts_with("HTTP/1.0 200 OK\r\n"));
        const auto body = out.find("\r\n\r\n");
        REQUIRE(body != std::string::npos);
        const std::string head = out.substr(0, body);
        CHECK(head.find("Transfer-Encoding") == std::string::npos);
        CHECK(head.find("Connection: keep-alive") == std::string::npos);
        CHECK(out.substr(body + 4) == "data: 0\n\ndata: 1\n\ndata: 2\n\n");
        // Relayed chunks lose their framing for HTTP/1.0, and keep it for HTTP/1.1.
        const std::string v10 = raw_exchange(ts.port, "GET /framed HTTP/1.0\r\n\r\n");
        CHECK(v10.ends_with("\r\n\r\nhello world!"));
        const std::string v11 =
            raw_exchange(ts.port, "GET /framed HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        CHECK(v11.find("Transfer-Encoding: chunked\r\n") != std::string::npos);
        // The relayed Cache-Control stands alone: ours is not added beside it.
        CHECK(v11.find("cache-control: no-store\r\n") != std::string::npos);
        CHECK(v11.find("Cache-Control: no-cache") == std::string::npos);
        CHECK(v11.ends_with("\r\n\r\n5\r\nhello\r\n6;x=1\r\n world\r\n1\r\n!\r\n0\r\n\r\n"));
        // Written at once: whole to an HTTP/1.1 client; to HTTP/1.0 nothing (write_framed
        // takes the chunks' data out instead).
        const std::string now11 = raw_exchange(
            ts.port, "GET /framed-now HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        CHECK(now11.ends_with("\r\n\r\n5\r\nhello\r\n2\r\n10\r\n0\r\n\r\n"));
        const std::string now10 = raw_exchange(ts.port, "GET /framed-now HTTP/1.0\r\n\r\n");
        CHECK(now10.ends_with("\r\n\r\nhello0"));
    }
    SECTION("chunks larger than the socket's buffer go out whole") {
        http::fetch_options big;
        big.body_limit = 16 << 20;
        const auto s = fetch_sync(ts.port, bhttp::verb::get, "/bigstream", big);
        REQUIRE(!s.ec);
        std::string expect;
        for (char c = 'a'; c < 'i'; ++c)
            expect += std::string(1 << 20, c);
        CHECK(s.body.size() == expect.size());
        CHECK(s.body == expect);
    }
    SECTION("a stream's header") {
        const std::string out =
            raw_exchange(ts.port, "GET /stream HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
        CHECK(out.starts_with("HTTP/1.1 200 OK\r\nServer: lanes\r\nContent-Type: "
                              "text/event-stream\r\nCache-Control: no-cache\r\n"
                              "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"));
        CHECK(out.ends_with("0\r\n\r\n"));
    }
}
