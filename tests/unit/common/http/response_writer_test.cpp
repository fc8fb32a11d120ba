// The send(response) adapter: a Beast response becomes the parts the writer sends, with the
// fields the writer sets itself left out; and the default wording of the server's own errors.
#include "common/http/response_writer.hpp"

#include "tests/unit/common/http/fake_writer.hpp"
#include "tests/unit/common/http/test_servers.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <utility>

using namespace lanes::common;
using namespace lanes::common::http::test;

namespace {

// What `out` makes of send(res).
bool send_through(fake_writer& out, http::response res) {
    bool sent = false;
    run_coroutine([&](asio::any_io_executor) -> asio::awaitable<void> {
        sent = co_await out.send(std::move(res));
    });
    return sent;
}

} // namespace

TEST_CASE("send(response) drops the fields the writer sets and keeps the rest in order", "[http]") {
    http::response res{bhttp::status::created, 11};
    res.set(bhttp::field::server, "someone-else");
    res.set("X-First", "1");
    res.set(bhttp::field::content_type, "application/json");
    res.set(bhttp::field::transfer_encoding, "chunked");
    res.set("x-lanes-replica", "http://r1");
    res.set(bhttp::field::connection, "close");
    res.set(bhttp::field::retry_after, "3");
    res.body() = R"({"ok":true})";
    res.set(bhttp::field::content_length, "999"); // whatever it says: the writer counts the body
    res.insert("X-First", "again");

    fake_writer out;
    CHECK(send_through(out, std::move(res)));
    CHECK(out.sends == 1);
    CHECK_FALSE(out.streamed);
    CHECK(out.status == 201);
    CHECK(out.content_type == "application/json");
    CHECK(out.body == R"({"ok":true})");
    // (Beast's insert puts a repeated name right after the last field of that name.)
    const http::header_list expected = {{"X-First", "1"},
                                        {"X-First", "again"},
                                        {"x-lanes-replica", "http://r1"},
                                        {"Retry-After", "3"}};
    CHECK(out.headers == expected);
}

TEST_CASE("send(response) matches the dropped names in any case", "[http]") {
    http::response res{bhttp::status::ok, 11};
    res.set("SERVER", "x");
    res.set("content-type", "text/event-stream");
    res.set("CONTENT-LENGTH", "2");
    res.set("Transfer-encoding", "gzip");
    res.set("connection", "keep-alive");
    res.set("Server-Timing", "db;dur=1"); // longer names that begin the same are kept
    res.set("Connection-Id", "7");
    res.body() = "hi";
    fake_writer out;
    CHECK(send_through(out, std::move(res)));
    CHECK(out.content_type == "text/event-stream");
    const http::header_list expected = {{"Server-Timing", "db;dur=1"}, {"Connection-Id", "7"}};
    CHECK(out.headers == expected);
    CHECK(out.body == "hi");
}

TEST_CASE("send(response) without a Content-Type sends text/plain", "[http]") {
    http::response res{bhttp::status::not_found, 10};
    res.body() = "missing";
    fake_writer out;
    CHECK(send_through(out, std::move(res)));
    CHECK(out.status == 404);
    CHECK(out.content_type == "text/plain");
    CHECK(out.headers.empty());
    CHECK(out.body == "missing");
}

TEST_CASE("send(response) from make_response sends only the body and its type", "[http]") {
    http::request req;
    req.start(bhttp::verb::get, "GET", "/", 11);
    req.add("Connection", "close"); // make_response adds Connection: close, which is dropped
    fake_writer out;
    CHECK(send_through(out, http::make_response(req, bhttp::status::accepted, "{}")));
    CHECK(out.status == 202);
    CHECK(out.content_type == "application/json");
    CHECK(out.headers.empty());
    CHECK(out.body == "{}");
}

TEST_CASE("send(response) reports a client that is gone", "[http]") {
    fake_writer out;
    out.leave();
    http::response res{bhttp::status::ok, 11};
    res.body() = "late";
    CHECK_FALSE(send_through(out, std::move(res)));
    CHECK(out.sends == 0);
    CHECK(out.body.empty());
}

TEST_CASE("plain_error_page is the message as a line of plain text", "[http]") {
    const auto page = http::plain_error_page(413, "body too large");
    CHECK(page.content_type == "text/plain");
    CHECK(page.body == "body too large\n");
    CHECK(http::plain_error_page(500, "").body == "\n");
}
