// The HTTP server and client against each other, in process, on loopback port 0.
#include "common/http/client.hpp"
#include "common/http/server.hpp"

#include <boost/asio.hpp>
#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

using namespace lanes::common;
namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using namespace std::chrono_literals;

namespace {

// A server on its own thread; the handler echoes, streams, or sleeps depending on the path.
struct test_server {
    asio::io_context io;
    http::server srv;
    unsigned short port = 0;
    std::thread thread;

    std::atomic<int> client_left{0}; // /watch: the client-closed callbacks that ran

    explicit test_server(http::server_config cfg)
        : srv(
              io, cfg,
              [this](http::request& req, http::response_writer& out) -> asio::awaitable<void> {
                  if (req.target() == "/watch") { // waits up to 3 s for its client to leave
                      auto timer = std::make_shared<asio::steady_timer>(
                          co_await asio::this_coro::executor, 3s);
                      out.on_client_closed([this, timer] {
                          client_left.fetch_add(1);
                          timer->cancel();
                      });
                      boost::system::error_code ec;
                      co_await timer->async_wait(asio::redirect_error(asio::use_awaitable, ec));
                      co_return; // no answer: the client is gone, or the test gave up
                  }
                  if (req.target() == "/stream") {
                      co_await out.begin_stream(bhttp::status::ok, "text/event-stream");
                      for (int i = 0; i < 3; ++i)
                          co_await out.write_chunk("data: " + std::to_string(i) + "\n\n");
                      co_await out.end_stream();
                      co_return;
                  }
                  if (req.target() == "/framed") { // chunks already framed, as a relay has them
                      co_await out.begin_stream(bhttp::status::ok, "text/event-stream");
                      co_await out.write_framed("5\r\nhello\r\n6;x=1\r\n world\r\n");
                      co_await out.write_chunk("!");
                      co_await out.end_stream();
                      co_return;
                  }
                  if (req.target() == "/bigstream") { // chunks larger than a socket buffer
                      co_await out.begin_stream(bhttp::status::ok, "application/octet-stream");
                      for (char c = 'a'; c < 'i'; ++c)
                          co_await out.write_chunk(std::string(1 << 20, c));
                      co_await out.end_stream();
                      co_return;
                  }
                  if (req.target() == "/throw")
                      throw std::runtime_error("boom");
                  if (req.target() == "/parts") { // the send overload that takes parts
                      const std::array<http::header_view, 2> h{{{"x-a", "1"}, {"x-b", "two"}}};
                      co_await out.send(bhttp::status::created, "application/json", h, req.body());
                      co_return;
                  }
                  co_await out.send(
                      http::make_response(req, bhttp::status::ok, req.body(), "text/plain"));
              },
              "test") {
        port = srv.listen("127.0.0.1", 0);
        thread = std::thread([this] { io.run(); });
    }
    ~test_server() {
        srv.stop();
        io.stop();
        thread.join();
    }
};

http::fetch_result fetch_sync(unsigned short port, bhttp::verb method, std::string path,
                              http::fetch_options options = {}) {
    const http::url target{"127.0.0.1", port, ""};
    return http::fetch_blocking(target, method, path, options);
}

// Connects `c` to 127.0.0.1:`port` and sends GET `path`: how the client tests begin.
asio::awaitable<void> connect_and_get(http::client_connection& c, unsigned short port,
                                      std::string path) {
    const http::url target{"127.0.0.1", port, ""};
    auto ec = co_await c.connect(target, 2s);
    REQUIRE(!ec);
    http::outgoing_request req{bhttp::verb::get, path, 11};
    ec = co_await c.write(req, 2s);
    REQUIRE(!ec);
}

// Sends raw bytes and returns everything the server answers until it closes (or 2 s pass).
std::string raw_exchange(unsigned short port, const std::string& bytes) {
    asio::io_context io;
    asio::ip::tcp::socket s(io);
    s.connect({asio::ip::make_address("127.0.0.1"), port});
    asio::write(s, asio::buffer(bytes));
    std::string out;
    boost::system::error_code ec;
    char buf[4096];
    s.non_blocking(false);
    struct timeval tv {
        2, 0
    };
    setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    for (;;) {
        const std::size_t n = s.read_some(asio::buffer(buf), ec);
        if (ec || n == 0)
            break;
        out.append(buf, n);
    }
    return out;
}

} // namespace

TEST_CASE("server answers, keeps the connection alive and streams chunks", "[http]") {
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
        // The same through the parts overload, whose rest goes out in send_rest().
        const auto p = fetch_sync(ts.port, bhttp::verb::post, "/parts", o);
        REQUIRE(!p.ec);
        CHECK(p.status == 201);
        CHECK(p.body == o.body);
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
    SECTION("two requests on one keep-alive connection") {
        const std::string req = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n";
        const std::string last = "GET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
        const std::string out = raw_exchange(ts.port, req + last);
        std::size_t count = 0;
        for (std::size_t pos = 0; (pos = out.find("HTTP/1.1 200", pos)) != std::string::npos; ++pos)
            ++count;
        CHECK(count == 2);
    }
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
        CHECK(v11.ends_with("\r\n\r\n5\r\nhello\r\n6;x=1\r\n world\r\n1\r\n!\r\n0\r\n\r\n"));
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
    SECTION("chunked stream arrives chunk by chunk through the client") {
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
    SECTION("a throwing handler gives 500 JSON and the server keeps serving") {
        const auto r = fetch_sync(ts.port, bhttp::verb::get, "/throw");
        CHECK(r.status == 500);
        CHECK(r.body.find("\"error\"") != std::string::npos);
        CHECK(fetch_sync(ts.port, bhttp::verb::get, "/ok").status == 200);
    }
}

TEST_CASE("server spreads connections over worker io_contexts, one thread each", "[http]") {
    asio::io_context io;
    std::vector<std::unique_ptr<asio::io_context>> owners;
    std::vector<asio::io_context*> workers;
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
    CHECK(raw_exchange(ts.port, "garbage\r\n\r\n").starts_with("HTTP/1.1 400"));
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

// A one-shot server that answers any request with `reply` and closes: responses the lanes server
// never sends, for the client's reading paths.
struct canned_server {
    asio::io_context io;
    asio::ip::tcp::acceptor acceptor{io, {asio::ip::make_address("127.0.0.1"), 0}};
    std::thread thread;
    // `hold`: how long to keep the connection open after the reply (a stalled server).
    explicit canned_server(std::string reply, std::chrono::milliseconds hold = 0ms) {
        thread = std::thread([this, reply, hold] {
            asio::ip::tcp::socket s(io);
            acceptor.accept(s);
            char buf[4096];
            boost::system::error_code ec;
            s.read_some(asio::buffer(buf), ec); // the request (small: one read)
            asio::write(s, asio::buffer(reply), ec);
            std::this_thread::sleep_for(hold);
            s.shutdown(asio::ip::tcp::socket::shutdown_both, ec);
        });
    }
    unsigned short port() const { return acceptor.local_endpoint().port(); }
    ~canned_server() { thread.join(); }
};

// What the client makes of `reply` to a GET.
http::fetch_result fetch_canned(std::string reply) {
    canned_server cs(std::move(reply));
    return fetch_sync(cs.port(), bhttp::verb::get, "/");
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

// Runs `body` as a coroutine on its own io_context until it finishes.
template <class F>
void run_coroutine(F body) {
    asio::io_context io;
    asio::co_spawn(io, body(io.get_executor()), asio::detached);
    io.run();
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
        std::string piece;
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

TEST_CASE("fetch_on keeps its connection, and replaces one the server closed while idle",
          "[http]") {
    http::server_config cfg;
    cfg.idle_timeout = 200ms;
    test_server ts(cfg);
    const http::url target{"127.0.0.1", ts.port, ""};
    http::fetch_options keep;
    keep.keep_alive = true;
    http::fetch_options once; // Connection: close
    struct step {
        int status = 0;
        boost::system::error_code ec;
        const void* conn = nullptr;
        bool open = false;
    };
    std::array<step, 4> steps{};
    run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        std::unique_ptr<http::client_connection> conn;
        asio::steady_timer idle(ex);
        for (std::size_t i = 0; i < steps.size(); ++i) {
            if (i == 2) { // past the server's idle timeout: it closes the kept connection
                idle.expires_after(500ms);
                co_await idle.async_wait(asio::use_awaitable);
            }
            const auto& options = i == 3 ? once : keep;
            auto r = co_await http::fetch_on(conn, ex, target, bhttp::verb::get, "/", options);
            steps[i] = {r.status, r.ec, conn.get(), conn && conn->is_open()};
        }
    });
    for (const auto& s : steps) {
        CHECK(!s.ec);
        CHECK(s.status == 200);
    }
    CHECK(steps[0].open);
    CHECK(steps[1].conn == steps[0].conn); // kept and used again
    CHECK(steps[2].conn != steps[1].conn); // the closed one replaced, the request sent again
    CHECK(steps[2].open);
    CHECK(steps[3].conn == steps[2].conn);
    CHECK(!steps[3].open); // asked to close
}

TEST_CASE("parse_url accepts base URLs and rejects others", "[http]") {
    auto u = http::parse_url("http://127.0.0.1:8001");
    REQUIRE(u);
    CHECK(u->host == "127.0.0.1");
    CHECK(u->port == 8001);
    CHECK(u->str() == "http://127.0.0.1:8001");
    u = http::parse_url("http://[::1]:9000/v1/");
    REQUIRE(u);
    CHECK(u->host == "::1");
    CHECK(u->base_path == "/v1");
    CHECK(u->authority() == "[::1]:9000");
    CHECK(http::parse_url("localhost:80")->port == 80);
    std::string why;
    CHECK(!http::parse_url("https://x", &why));
    CHECK(why.find("https") != std::string::npos);
    CHECK(!http::parse_url("http://x:99999"));
    CHECK(!http::parse_url("http://:80"));
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

TEST_CASE("client takes a body that came with its header without waiting", "[http]") {
    // The whole answer in one write with a held connection: after the header, the body is
    // buffered, so take_buffered_piece settles it; a second call reports the end.
    canned_server cs("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 300ms);
    asio::io_context io;
    std::string piece, second;
    bool first_settled = false, end_settled = false, done = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            http::client_connection c(io.get_executor());
            co_await connect_and_get(c, cs.port(), "/");
            auto ec = co_await c.read_header(2s);
            REQUIRE(!ec);
            boost::system::error_code tec;
            first_settled = c.take_buffered_piece(piece, tec);
            CHECK(!tec);
            done = c.done();
            end_settled = c.take_buffered_piece(second, tec);
            CHECK(!tec);
        },
        asio::detached);
    io.run();
    CHECK(first_settled);
    CHECK(piece == "hello");
    CHECK(done);
    CHECK(end_settled);
    CHECK(second.empty());
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
