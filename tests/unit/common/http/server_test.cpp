// The HTTP server: listening, answering, spreading connections over threads, stopping.
#include "common/http/server.hpp"

#include "tests/unit/common/http/test_servers.hpp"

#include <catch2/catch.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>

using namespace lanes::common;
using namespace lanes::common::http::test;

TEST_CASE("server answers whole bodies, larger than the socket buffers too", "[http]") {
    test_server ts({});
    SECTION("echo") {
        http::fetch_options o;
        o.body = "hello";
        const auto r = fetch_sync(ts.port, bhttp::verb::post, "/echo", o);
        REQUIRE(!r.ec);
        CHECK(r.status == 200);
        CHECK(r.body == "hello");
    }
    SECTION("bodies larger than the socket buffers arrive whole, both ways") {
        // Neither the request nor the answer fits a socket's send buffer, so each write has a
        // part the socket takes at once and a rest that waits for the reader.
        http::fetch_options o;
        o.body.resize(6 << 20);
        for (std::size_t i = 0; i < o.body.size(); ++i)
            o.body[i] = static_cast<char>('a' + (i * 7919 + i / 4096) % 26);
        o.body_limit = 8 << 20;
        const auto r = fetch_sync(ts.port, bhttp::verb::post, "/echo", o);
        REQUIRE(!r.ec);
        CHECK(r.status == 200);
        CHECK(r.body.size() == o.body.size());
        CHECK(r.body == o.body);
        // The same through the parts overload, whose rest is awaited.
        const auto p = fetch_sync(ts.port, bhttp::verb::post, "/parts", o);
        REQUIRE(!p.ec);
        CHECK(p.status == 201);
        CHECK(p.body == o.body);
    }
}

TEST_CASE("server spreads connections over worker io_contexts, one thread each", "[http]") {
    // The workers are declared first so they outlive `io`: an accept still queued there when it
    // goes holds a socket that belongs to a worker's context (the router's main does the same).
    std::vector<std::unique_ptr<asio::io_context>> owners;
    std::vector<asio::io_context*> workers;
    asio::io_context io;
    for (int i = 0; i < 2; ++i) {
        owners.push_back(std::make_unique<asio::io_context>(1));
        workers.push_back(owners.back().get());
    }
    std::mutex mutex;
    std::set<std::thread::id> handler_threads;
    http::server srv(
        io, {},
        [&](http::request& req, http::response_writer& out) -> asio::awaitable<void> {
            {
                std::lock_guard lock(mutex);
                handler_threads.insert(std::this_thread::get_id());
            }
            co_await out.send(http::make_response(req, bhttp::status::ok, "ok", "text/plain"));
        },
        "workers");
    srv.spread_over(workers);
    const unsigned short port = srv.listen("127.0.0.1", 0);
    std::vector<asio::executor_work_guard<asio::io_context::executor_type>> guards;
    std::vector<std::thread> threads;
    for (auto* w : workers) {
        guards.push_back(asio::make_work_guard(*w));
        threads.emplace_back([w] { w->run(); });
    }
    std::thread acceptor_thread([&io] { io.run(); });
    for (int i = 0; i < 4; ++i) { // one connection each: round-robin over both workers
        const auto r = fetch_sync(port, bhttp::verb::get, "/");
        REQUIRE(!r.ec);
        CHECK(r.status == 200);
        CHECK(r.body == "ok");
    }
    srv.stop();
    io.stop();
    for (auto* w : workers)
        w->stop();
    acceptor_thread.join();
    for (auto& t : threads)
        t.join();
    CHECK(handler_threads.size() == 2);
}

TEST_CASE("servers with reuse_port share one port, and without it the second cannot listen",
          "[http]") {
    asio::io_context io;
    std::map<std::string, int> answered; // by server name; one thread runs them all
    const auto handler = [&](std::string name) {
        return [&answered, name](http::request& req,
                                 http::response_writer& out) -> asio::awaitable<void> {
            ++answered[name];
            co_await out.send(http::make_response(req, bhttp::status::ok, name, "text/plain"));
        };
    };
    http::server_config shared;
    shared.reuse_port = true;
    http::server a(io, shared, handler("a"), "a");
    http::server b(io, shared, handler("b"), "b");
    const unsigned short port = a.listen("127.0.0.1", 0);
    CHECK(b.listen("127.0.0.1", port) == port);
    SECTION("a listener without reuse_port is refused, with the address and the flag named") {
        http::server c(io, {}, handler("c"), "c");
        try {
            c.listen("127.0.0.1", port);
            FAIL("listened on a port two others hold");
        } catch (const std::runtime_error& e) {
            const std::string what = e.what();
            CHECK_THAT(what,
                       Catch::Contains("c cannot listen on 127.0.0.1:" + std::to_string(port)));
            CHECK_THAT(what, Catch::Contains("--reuse-port"));
        }
    }
    SECTION("the kernel spreads new connections over both") {
        std::thread runner([&io] {
            auto guard = asio::make_work_guard(io);
            io.run();
        });
        // 32 connections, each to one of two listeners by its address hash: both are reached
        // unless 31 hashes in a row agree.
        for (int i = 0; i < 32; ++i) {
            const auto r = fetch_sync(port, bhttp::verb::get, "/");
            REQUIRE(!r.ec);
            CHECK(r.status == 200);
        }
        a.stop();
        b.stop();
        io.stop();
        runner.join();
        CHECK(answered["a"] > 0);
        CHECK(answered["b"] > 0);
        CHECK(answered["a"] + answered["b"] == 32);
    }
}

TEST_CASE("server stop closes idle connections and lets a request in progress finish", "[http]") {
    test_server ts({});
    // An idle keep-alive connection: stop() closes it.
    asio::io_context io;
    asio::ip::tcp::socket idle(io);
    idle.connect({asio::ip::make_address("127.0.0.1"), ts.port});
    asio::write(idle, asio::buffer(std::string("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")));
    char buf[4096];
    boost::system::error_code ec;
    REQUIRE(
        std::string_view(buf, idle.read_some(asio::buffer(buf), ec)).starts_with("HTTP/1.1 200"));
    CHECK(ts.srv.open_connections() == 1);
    ts.srv.stop();
    struct timeval tv {
        2, 0
    };
    setsockopt(idle.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    idle.read_some(asio::buffer(buf), ec);
    CHECK(ec == asio::error::eof);
    // No more connections are taken.
    asio::ip::tcp::socket late(io);
    late.connect({asio::ip::make_address("127.0.0.1"), ts.port}, ec);
    if (!ec) {
        setsockopt(late.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        asio::write(late, asio::buffer(std::string("GET /a HTTP/1.1\r\nHost: x\r\n\r\n")), ec);
        const std::size_t n = late.read_some(asio::buffer(buf), ec);
        CHECK(n == 0);
    }
}

namespace {

std::size_t fd_table_slots() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.starts_with("FDSize:"))
            return std::stoul(line.substr(7));
    return 0;
}

std::size_t open_descriptors() {
    std::size_t n = 0;
    for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator("/proc/self/fd"))
        ++n;
    return n;
}

} // namespace

TEST_CASE("the descriptor table grows once at start and no descriptor in use is touched",
          "[http]") {
    rlimit lim{};
    REQUIRE(getrlimit(RLIMIT_NOFILE, &lim) == 0);
    const std::size_t before = fd_table_slots();
    REQUIRE(before > 0);
    const std::size_t want = std::min<std::size_t>(lim.rlim_cur, before * 4);
    const std::size_t open_before = open_descriptors();
    const std::size_t after = http::grow_descriptor_table(want);
    CHECK(after == fd_table_slots());
    CHECK(after >= want);
    CHECK(open_descriptors() == open_before); // the descriptor that grew it is closed again

    // A descriptor already open where the growing one would go stays open, on the same file.
    const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
    REQUIRE(null_fd >= 0);
    const int high = ::fcntl(null_fd, F_DUPFD_CLOEXEC, static_cast<int>(after - 1));
    REQUIRE(high == static_cast<int>(after - 1));
    struct stat want_stat {};
    REQUIRE(::fstat(high, &want_stat) == 0);
    CHECK(http::grow_descriptor_table(after) == after);
    struct stat now {};
    REQUIRE(::fstat(high, &now) == 0);
    CHECK(now.st_ino == want_stat.st_ino);
    ::close(high);
    ::close(null_fd);

    // Past the open-file limit, it stops at the limit and fails nothing.
    CHECK(http::grow_descriptor_table(std::size_t{1} << 40) >= after);
}
