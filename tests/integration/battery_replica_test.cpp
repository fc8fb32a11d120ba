// The router against hostile replicas: what each kind of broken answer gives the client, and
// whether it is tried elsewhere (the exact count of lanes_router_retries_total).
#include "battery.hpp"
#include "fake_engine.hpp"
#include "traffic.hpp"

#include <boost/asio.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <string>
#include <vector>

using namespace lanes;
using namespace lanes::test;
using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace beast = boost::beast;

namespace {

// What the hostile replica does with a POST.
enum class hostility {
    reset,          // closes the connection without a byte
    garbage_status, // a status line that is not HTTP
    bare_lf_header, // a header whose lines end in LF alone (no CRLF CRLF ever comes)
    odd_status,     // a status past 599
    huge_header,    // a header far past any limit
    short_body,     // Content-Length 100, ten bytes, then closes
    bad_chunked,    // a chunk size that is not hex
    backpressure,   // 503 with Retry-After
    server_error,   // 500 with a JSON error
    silent,         // reads the request and never answers
};

// Serves GETs (health, models, metrics) as a vLLM server would and each POST as `mode` says.
raw_backend::serve_fn hostile(const std::atomic<hostility>& mode, std::atomic<int>& posts) {
    return [&mode, &posts](raw_backend::socket_ptr s, const std::atomic<bool>& stopping) {
        set_receive_timeout(*s, 200ms);
        std::string in;
        char buf[16384];
        boost::system::error_code ec;
        while (!stopping.load()) {
            const std::size_t n = s->read_some(asio::buffer(buf), ec);
            if (ec == asio::error::would_block || ec == asio::error::try_again) {
                ec = {};
                continue;
            }
            if (ec)
                return;
            in.append(buf, n);
            for (;;) {
                const auto end = in.find("\r\n\r\n");
                if (end == std::string::npos)
                    break;
                std::size_t length = 0;
                const auto cl = in.find("Content-Length: ");
                if (cl != std::string::npos && cl < end)
                    length = std::stoul(in.substr(cl + 16));
                if (in.size() < end + 4 + length)
                    break;
                const bool is_get = in.rfind("GET ", 0) == 0;
                const std::string first_line = in.substr(0, in.find("\r\n"));
                in.erase(0, end + 4 + length);
                std::string out;
                if (is_get) {
                    const std::string body =
                        first_line.find("/v1/models") != std::string::npos
                            ? R"({"object":"list","data":[{"id":"m","object":"model","owned_by":"vllm"}]})"
                            : "";
                    out = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
                    asio::write(*s, asio::buffer(out), ec);
                    continue;
                }
                ++posts;
                switch (mode.load()) {
                case hostility::reset:
                    s->close(ec);
                    return;
                case hostility::garbage_status:
                    out = "HTXP/9 what\r\n\r\n";
                    break;
                case hostility::bare_lf_header:
                    out = "HTTP/1.1 200 OK\nContent-Length: 2\n\n{}";
                    break;
                case hostility::odd_status:
                    out = "HTTP/1.1 600 Odd\r\nContent-Length: 0\r\n\r\n";
                    break;
                case hostility::huge_header:
                    out = "HTTP/1.1 200 OK\r\nX-Big: " + std::string(200000, 'b') +
                          "\r\nContent-Length: 2\r\n\r\n{}";
                    break;
                case hostility::short_body:
                    out = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: "
                          "100\r\n\r\n{\"a\":12345";
                    asio::write(*s, asio::buffer(out), ec);
                    s->close(ec);
                    return;
                case hostility::bad_chunked:
                    out = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: "
                          "chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n";
                    break;
                case hostility::backpressure:
                    out = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nContent-Length: "
                          "0\r\n\r\n";
                    break;
                case hostility::server_error: {
                    const std::string body = R"({"error":{"message":"boom","code":500}})";
                    out = "HTTP/1.1 500 Internal Server Error\r\nContent-Type: "
                          "application/json\r\nContent-Length: " +
                          std::to_string(body.size()) + "\r\n\r\n" + body;
                    break;
                }
                case hostility::silent:
                    break;
                }
                if (!out.empty())
                    asio::write(*s, asio::buffer(out), ec);
            }
        }
    };
}

} // namespace

TEST_CASE("battery: hostile replicas: each broken answer's status, and which are tried elsewhere",
          "[router][battery]") {
    std::atomic<hostility> mode{hostility::reset};
    std::atomic<int> posts{0};
    raw_backend bad(hostile(mode, posts));
    fake_engine good({"m"});
    auto router =
        std::make_unique<process>(LANES_ROUTER_BIN, std::vector<std::string>{"--host",
                                                                             "127.0.0.1",
                                                                             "--port",
                                                                             "0",
                                                                             "--replica",
                                                                             bad.url(),
                                                                             "--replica",
                                                                             good.url(),
                                                                             "--policy",
                                                                             "round_robin",
                                                                             "--health-interval",
                                                                             "50ms",
                                                                             "--access-log",
                                                                             "false",
                                                                             "--failure-threshold",
                                                                             "1000",
                                                                             "--first-byte-timeout",
                                                                             "500ms",
                                                                             "--max-retries",
                                                                             "1"});
    REQUIRE(wait_healthy(router->port(), 10s));
    REQUIRE(eventually([&] { return get(router->port(), "/readiness").status == 200; }, 5s));
    struct expectation {
        hostility mode;
        const char* name;
        int status; // what a request the hostile replica took first gets
        bool retried;
        // POSTs the hostile replica gets per request: a reset on a pooled connection looks like
        // one the replica closed while idle, and is sent once more on a fresh connection there.
        int most_posts_each = 1;
    };
    const std::vector<expectation> table = {
        {hostility::reset, "reset before any byte", 200, true, 2},
        {hostility::backpressure, "503 backpressure", 200, true},
        {hostility::garbage_status, "a status line that is not HTTP", 502, false},
        // Malformed at its first line's end: 502 at once, not 504 after --first-byte-timeout.
        {hostility::bare_lf_header, "a header of bare LFs", 502, false},
        {hostility::odd_status, "status 600", 502, false},
        {hostility::huge_header, "a 200 KB header", 502, false},
        {hostility::short_body, "a body cut short", 502, false},
        {hostility::bad_chunked, "a chunk size that is not hex", 502, false},
        {hostility::server_error, "500", 500, false},
        {hostility::silent, "no answer within --first-byte-timeout", 504, false},
    };
    for (const auto& row : table) {
        INFO("row: " << row.name);
        mode = row.mode;
        const int posts_before = posts.load();
        const double retries_before = fleet_counter(router->port(), "lanes_router_retries_total");
        int hostile_first = 0, expected_status = 0;
        for (int i = 0; i < 4; ++i) {
            const int seen = posts.load();
            const auto r = post_json(router->port(), "/v1/completions", small);
            const bool took_bad = posts.load() > seen;
            hostile_first += took_bad;
            if (took_bad) {
                expected_status += r.status == row.status;
                if (row.status == 200)
                    CHECK(r.header("x-lanes-replica") == good.url());
                if (row.status >= 500) {
                    const auto doc = nlohmann::json::parse(r.body, nullptr, false);
                    CHECK(doc.is_object());
                }
            } else {
                CHECK(r.status == 200);
            }
        }
        CHECK(hostile_first >= 1); // round-robin: half of them
        CHECK(expected_status == hostile_first);
        CHECK(posts.load() - posts_before >= hostile_first);
        CHECK(posts.load() - posts_before <= hostile_first * row.most_posts_each);
        const double retries = fleet_counter(router->port(), "lanes_router_retries_total");
        CHECK(retries - retries_before == (row.retried ? hostile_first : 0));
        if (row.mode == hostility::backpressure)
            std::this_thread::sleep_for(1100ms); // its Retry-After: 1 runs out
    }
    // The hostile replica answered every probe: it is still in the pool, and the router serves.
    CHECK(post_json(router->port(), "/v1/completions", small).status >= 200);
}
