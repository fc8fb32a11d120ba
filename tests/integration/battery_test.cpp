// The router's edge against hostile bytes: a table of raw requests (battery_rows.cpp), each sent on
// a connection of its own to a router in front of a recording engine. Every row says the status the
// client gets, whether the router closes the connection, what the engine received (or that it
// received nothing), and for rows about memory the router's peak RSS. Hostile replicas are
// battery_replica_test.cpp; a router short of file descriptors, battery_fd_test.cpp.
#include "battery.hpp"
#include "battery_rows.hpp"
#include "fake_engine.hpp"
#include "traffic.hpp"

#include <boost/asio.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

using namespace lanes;
using namespace lanes::test;
using namespace lanes::test::battery;
using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace beast = boost::beast;

namespace {

// Reads one answer (past a 100 Continue) from `s`; status 0 when none came.
bool read_answer(asio::ip::tcp::socket& s, beast::flat_buffer& buf, outcome& out) {
    for (;;) {
        beast::http::response_parser<beast::http::string_body> parser;
        parser.body_limit(64 << 20);
        beast::error_code ec;
        beast::http::read(s, buf, parser, ec);
        if (ec)
            return false;
        auto res = parser.release();
        if (res.result_int() == 100) {
            out.got_continue = true;
            continue;
        }
        out.status = res.result_int();
        out.body = res.body();
        out.headers = res.base();
        return true;
    }
}

// Sends `bytes` on a fresh connection (in `pieces` when given, with a pause between), reads the
// answer, then learns whether the connection is still usable: a second request on it either gets
// its answer (open) or meets the end of the stream (closed).
outcome send_raw(unsigned short port, const std::vector<std::string>& pieces,
                 std::chrono::milliseconds pause = 0ms) {
    asio::io_context io;
    asio::ip::tcp::socket s(io);
    s.connect({asio::ip::make_address("127.0.0.1"), port});
    set_receive_timeout(s, 5s);
    beast::error_code ec;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        if (i > 0 && pause.count() > 0)
            std::this_thread::sleep_for(pause);
        asio::write(s, asio::buffer(pieces[i]), ec);
        if (ec)
            break;
    }
    outcome out;
    beast::flat_buffer buf;
    if (!read_answer(s, buf, out)) {
        out.closed = true;
        return out;
    }
    asio::write(s, asio::buffer(std::string("GET /health HTTP/1.1\r\nHost: t\r\n\r\n")), ec);
    outcome probe;
    out.closed = ec || !read_answer(s, buf, probe) || probe.status != 200;
    return out;
}

// kB of the router's VmHWM (peak resident set) or VmRSS.
long status_kb(int pid, const std::string& field) {
    std::ifstream in("/proc/" + std::to_string(pid) + "/status");
    std::string line;
    while (std::getline(in, line))
        if (line.rfind(field + ":", 0) == 0)
            return std::stol(line.substr(field.size() + 1));
    return -1;
}

} // namespace

TEST_CASE("battery: hostile request bytes get the right status, close, and forward nothing wrong",
          "[router][battery]") {
    fake_engine engine({"m"});
    auto router = std::make_unique<process>(
        LANES_ROUTER_BIN,
        std::vector<std::string>{"--host", "127.0.0.1", "--port", "0", "--replica", engine.url(),
                                 "--health-interval", "50ms", "--access-log", "false",
                                 "--header-read-timeout", "1s"});
    REQUIRE(wait_healthy(router->port(), 10s));
    REQUIRE(eventually([&] { return get(router->port(), "/readiness").status == 200; }, 5s));
    const auto table = rows();
    REQUIRE(table.size() >= 60);
    // BATTERY_ROWS=A-B runs rows A to B only (counted from 0), to find the one that breaks.
    int first_row = 0, last_row = 1 << 30;
    if (const char* only = std::getenv("BATTERY_ROWS"))
        std::sscanf(only, "%d-%d", &first_row, &last_row);
    int index = -1;
    for (const auto& row : table) {
        ++index;
        if (index < first_row || index > last_row)
            continue;
        INFO("row: " << row.name);
        const auto before = engine.requests().size();
        const outcome o = send_raw(router->port(), row.pieces);
        if (o.status == 0 && row.status != 0 &&
            !eventually([&] { return get(router->port(), "/health").status == 200; }, 1s))
            FAIL("the router stopped answering: " << router->log().substr(0, 4000));
        CHECK(o.status == row.status);
        CHECK(o.closed == row.closed);
        const auto got = engine.requests();
        const fake_engine::received* last = got.size() > before ? &got.back() : nullptr;
        if (!row.forwarded) {
            CHECK(got.size() == before);
        } else {
            REQUIRE(last != nullptr);
            CHECK(last->body.size() == row.forwarded->size());
            CHECK(last->body == *row.forwarded);
        }
        if (row.more)
            row.more(o, last);
        // (A sanitizer's shadow memory and quarantine make resident sizes mean nothing there.)
        if (row.max_peak_mb > 0 && !under_sanitizer) {
            const long peak = status_kb(router->pid(), "VmHWM");
            INFO("peak RSS " << peak / 1024 << " MB");
            CHECK(peak > 0);
            CHECK(peak < row.max_peak_mb * 1024);
        }
    }
    // A client that stops in the middle of its header is cut at --header-read-timeout.
    const auto start = std::chrono::steady_clock::now();
    const outcome slow =
        send_raw(router->port(), {std::string("POST /v1/completions HTTP/1.1\r\nHost: t\r\n")});
    CHECK(slow.closed);
    CHECK(std::chrono::steady_clock::now() - start < 4s);
    // The big bodies' buffers went back: the resident set falls well under its peak.
    if (!under_sanitizer) {
        const long peak = status_kb(router->pid(), "VmHWM");
        long rss = 0;
        const bool fell = eventually(
            [&] {
                rss = status_kb(router->pid(), "VmRSS");
                return rss <= peak - 4096; // at least 4 MiB of the 8 MiB bodies given back
            },
            5s);
        INFO("rss " << rss / 1024 << " MB, peak " << peak / 1024 << " MB");
        CHECK(fell);
    }
    // The router is still serving.
    CHECK(post_json(router->port(), "/v1/completions", small).status == 200);
}
