// The server's request (fields as offsets, keep-alive by version and Connection), the responses
// made from it, and the header text that goes on the wire before a body.
#include "common/http/message.hpp"

#include <catch2/catch.hpp>

#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

using namespace lanes::common;
namespace bhttp = boost::beast::http;

namespace {

// A GET / of `version` with the given fields, in order.
http::request request_with(unsigned version,
                           const std::vector<std::pair<std::string, std::string>>& fields) {
    http::request req;
    req.start(bhttp::verb::get, "GET", "/", version);
    for (const auto& [n, v] : fields)
        req.add(n, v);
    return req;
}

} // namespace

TEST_CASE("request keep-alive follows the version and every Connection field", "[http]") {
    struct row {
        unsigned version;
        std::vector<std::pair<std::string, std::string>> fields;
        bool keep;
    };
    const std::vector<row> table = {
        {11, {}, true},
        {11, {{"Connection", "close"}}, false},
        {11, {{"CONNECTION", "Close"}}, false},             // name and token in any case
        {11, {{"Connection", "keep-alive, close"}}, false}, // close wins
        {11, {{"Connection", "upgrade"}, {"connection", "close"}}, false}, // a second field
        {11, {{"Connection", "closed"}}, true},  // a whole token, not a prefix
        {11, {{"X-Connection", "close"}}, true}, // another field
        {10, {}, false},
        {10, {{"Connection", "keep-alive"}}, true},
        {10, {{"Connection", " Keep-Alive , foo"}}, true},
        {10, {{"Connection", "keep-alive"}, {"Connection", "close"}}, false},
        {10, {{"Connection", "keep-alives"}}, false},
        {10, {{"Keep-Alive", "timeout=5"}}, false}, // only Connection counts
    };
    for (std::size_t i = 0; i < table.size(); ++i) {
        INFO("row " << i);
        const auto req = request_with(table[i].version, table[i].fields);
        CHECK(req.version() == table[i].version);
        CHECK(req.keep_alive() == table[i].keep);
    }
}

TEST_CASE("request fields keep their order and are found by name in any case", "[http]") {
    http::request req;
    req.start(bhttp::verb::post, "POST", "/v1/completions?x=1", 11, 128);
    req.add("Host", "router:8000");
    req.add("Content-Type", "application/json");
    req.add("X-Dup", "first");
    req.add("x-dup", "second");
    req.add("X-Empty", "");
    req.body() = "{}";
    CHECK(req.method() == bhttp::verb::post);
    CHECK(req.method_string() == "POST");
    CHECK(req.target() == "/v1/completions?x=1");
    REQUIRE(req.field_count() == 5);
    const std::vector<std::string> names = {"Host", "Content-Type", "X-Dup", "x-dup", "X-Empty"};
    const std::vector<std::string> values = {"router:8000", "application/json", "first", "second",
                                             ""};
    for (std::size_t i = 0; i < names.size(); ++i) {
        CHECK(req.name(i) == names[i]);
        CHECK(req.value(i) == values[i]);
    }
    CHECK(req.find("content-TYPE") == std::optional<std::string_view>("application/json"));
    CHECK(req.find("x-empty") == std::optional<std::string_view>("")); // present, empty
    CHECK_FALSE(req.find("Content-Length"));
    CHECK_FALSE(req.find("Host2"));
    CHECK(req["X-DUP"] == "first");
    CHECK(req.joined("x-dup") == "first, second"); // a list that came as two fields
    CHECK(req.joined("host") == "router:8000");
    CHECK(req.joined("absent").empty());
    CHECK(req["absent"].empty());
    CHECK(req[bhttp::field::host] == "router:8000"); // by Beast's field enum
    CHECK(req[bhttp::field::content_type] == "application/json");
    CHECK(req[bhttp::field::user_agent].empty());
    CHECK(req.body() == "{}");

    // start() begins a new request: no fields or body of the last one are left.
    req.start(bhttp::verb::delete_, "DELETE", "/admin/replicas", 10);
    CHECK(req.method() == bhttp::verb::delete_);
    CHECK(req.method_string() == "DELETE");
    CHECK(req.target() == "/admin/replicas");
    CHECK(req.version() == 10);
    CHECK(req.field_count() == 0);
    CHECK_FALSE(req.find("host"));
    CHECK(req.body().empty());
}

TEST_CASE("start_in keeps views into its header copy, whatever is appended between", "[http]") {
    std::string header = "POST /gen HTTP/1.1\r\nHost: a\r\nX-Id: 42\r\n\r\n";
    const std::string_view h(header);
    const std::string elsewhere_name = "X-Extra", elsewhere_value = "outside";
    http::request req;
    req.start_in(h, bhttp::verb::post, h.substr(0, 4), h.substr(5, 4), 11);
    req.add(h.substr(20, 4), h.substr(26, 1));    // Host: a, from the header
    req.add(elsewhere_name, elsewhere_value);     // appended to the copy
    req.add(h.substr(29, 4), h.substr(35, 2));    // X-Id: 42, after the append
    req.add(h.substr(20, 4), std::string_view{}); // an empty value with no data
    req.body() = "payload";
    // The source goes away: everything reads from the request's own copy.
    header.assign(header.size(), '?');
    header.clear();
    header.shrink_to_fit();
    CHECK(req.method_string() == "POST");
    CHECK(req.target() == "/gen");
    REQUIRE(req.field_count() == 4);
    CHECK(req.name(0) == "Host");
    CHECK(req.value(0) == "a");
    CHECK(req.name(1) == "X-Extra");
    CHECK(req.value(1) == "outside");
    CHECK(req.name(2) == "X-Id");
    CHECK(req.value(2) == "42");
    CHECK(req.name(3) == "Host");
    CHECK(req.value(3).empty());
    CHECK(req["x-id"] == "42");
    CHECK(req.body() == "payload");

    // A second start_in on the same request forgets the first.
    const std::string next = "GET /n HTTP/1.0\r\n\r\n";
    req.start_in(next, bhttp::verb::get, std::string_view(next).substr(0, 3),
                 std::string_view(next).substr(4, 2), 10);
    CHECK(req.method_string() == "GET");
    CHECK(req.target() == "/n");
    CHECK(req.field_count() == 0);
    CHECK(req.body().empty());
    CHECK_FALSE(req.keep_alive());
}

TEST_CASE("make_response sets Server, Content-Type, Connection and Content-Length", "[http]") {
    auto req = request_with(11, {});
    auto res = http::make_response(req, bhttp::status::ok, R"({"a":1})");
    CHECK(res.result() == bhttp::status::ok);
    CHECK(res.version() == 11);
    CHECK(res.keep_alive());
    CHECK(res.body() == R"({"a":1})");
    CHECK(http::serialize_header(res) == "HTTP/1.1 200 OK\r\nServer: lanes\r\n"
                                         "Content-Type: application/json\r\n"
                                         "Content-Length: 7\r\n\r\n");

    req = request_with(11, {{"Connection", "close"}});
    res = http::make_response(req, bhttp::status::bad_request, "no", "text/plain");
    CHECK_FALSE(res.keep_alive());
    CHECK(http::serialize_header(res) == "HTTP/1.1 400 Bad Request\r\nServer: lanes\r\n"
                                         "Content-Type: text/plain\r\nConnection: close\r\n"
                                         "Content-Length: 2\r\n\r\n");

    // HTTP/1.0: the answer is 1.0 too, and says keep-alive only when the request asked.
    req = request_with(10, {{"Connection", "keep-alive"}});
    res = http::make_response(req, bhttp::status::not_found, "");
    CHECK(res.version() == 10);
    CHECK(http::serialize_header(res) == "HTTP/1.0 404 Not Found\r\nServer: lanes\r\n"
                                         "Content-Type: application/json\r\n"
                                         "Connection: keep-alive\r\nContent-Length: 0\r\n\r\n");
    req = request_with(10, {});
    res = http::make_response(req, bhttp::status::ok, "x");
    CHECK_FALSE(res.keep_alive());
    CHECK(res.find(bhttp::field::connection) == res.end());

    // A body on a status that has none is Beast's error.
    CHECK_THROWS_AS(http::make_response(req, bhttp::status::no_content, "x"),
                    std::invalid_argument);
}

TEST_CASE("serialize_header writes the start line and fields in their order", "[http]") {
    http::outgoing_request req{bhttp::verb::post, "/v1/chat/completions", 11};
    req.set(bhttp::field::host, "10.0.0.1:8001");
    req.set("x-request-id", "r-1");
    req.set(bhttp::field::content_type, "application/json");
    req.insert("X-Multi", "1");
    req.insert("X-Multi", "2");
    CHECK(http::serialize_header(req) == "POST /v1/chat/completions HTTP/1.1\r\n"
                                         "Host: 10.0.0.1:8001\r\nx-request-id: r-1\r\n"
                                         "Content-Type: application/json\r\n"
                                         "X-Multi: 1\r\nX-Multi: 2\r\n\r\n");
    // No fields: the start line and the blank line.
    const http::outgoing_request bare{bhttp::verb::get, "/health", 10};
    CHECK(http::serialize_header(bare) == "GET /health HTTP/1.0\r\n\r\n");

    http::response res{bhttp::status::service_unavailable, 11};
    res.set(bhttp::field::retry_after, "1");
    CHECK(http::serialize_header(res) ==
          "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n\r\n");
    res.reason("Busy Now"); // a reason of its own replaces the standard one
    CHECK(http::serialize_header(res) == "HTTP/1.1 503 Busy Now\r\nRetry-After: 1\r\n\r\n");
    // The body is not part of the header.
    res.body() = "later";
    res.prepare_payload();
    CHECK(http::serialize_header(res) ==
          "HTTP/1.1 503 Busy Now\r\nRetry-After: 1\r\nContent-Length: 5\r\n\r\n");
}

TEST_CASE("version_text names 1.0 and takes everything else for 1.1", "[http]") {
    CHECK(http::version_text(10) == "HTTP/1.0");
    CHECK(http::version_text(11) == "HTTP/1.1");
    CHECK(http::version_text(20) == "HTTP/1.1");
    CHECK(http::version_text(9) == "HTTP/1.1");
}
