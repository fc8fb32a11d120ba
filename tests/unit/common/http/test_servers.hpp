// Test helpers for the HTTP tests: a lanes server on its own thread whose handler echoes,
// streams or waits by path; a one-shot server with a canned answer; raw exchanges on loopback.
#pragma once

#include "common/http/client.hpp"
#include "common/http/fetch.hpp"
#include "common/http/server.hpp"

#include <boost/asio.hpp>
#include <catch2/catch.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

namespace lanes::common::http::test {

namespace http = lanes::common::http;

namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
using namespace std::chrono_literals;

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
                      co_await out.begin_stream(bhttp::status::ok, "text/event-stream", {});
                      for (int i = 0; i < 3; ++i)
                          co_await out.write_chunk("data: " + std::to_string(i) + "\n\n");
                      co_await out.end_stream();
                      co_return;
                  }
                  if (req.target() == "/framed") { // chunks already framed, as a relay has them
                      // With the cache policy of the answer it relays (which replaces ours).
                      const std::array<http::header_view, 1> relayed{
                          {{"cache-control", "no-store"}}};
                      co_await out.begin_stream(bhttp::status::ok, "text/event-stream", relayed);
                      co_await out.write_framed("5\r\nhello\r\n6;x=1\r\n world\r\n");
                      co_await out.write_chunk("!");
                      co_await out.end_stream();
                      co_return;
                  }
                  if (req.target() == "/framed-now") { // the relay's write without a wait
                      co_await out.begin_stream(bhttp::status::ok, "text/event-stream", {});
                      const std::string_view chunks = "5\r\nhello\r\n";
                      const auto sent = out.write_framed_now(chunks);
                      if (sent && *sent < chunks.size())
                          co_await out.write_framed(chunks.substr(*sent));
                      // What it reported, as a chunk of its own: the bytes taken at once.
                      // Worded before the co_await: GCC 12 destroys the temporaries of a ?:
                      // inside a co_await expression twice (a heap corruption that surfaced
                      // later in the same process, in libzmq).
                      const std::string reported = sent ? std::to_string(*sent) : "gone";
                      co_await out.write_chunk(reported);
                      co_await out.end_stream();
                      co_return;
                  }
                  if (req.target() == "/bigstream") { // chunks larger than a socket buffer
                      co_await out.begin_stream(bhttp::status::ok, "application/octet-stream", {});
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
              "test",
              [](int status, std::string_view message) {
                  return http::error_page{"application/json",
                                          "{\"status\":" + std::to_string(status) +
                                              ",\"message\":\"" + std::string(message) + "\"}"};
              }) {
        port = srv.listen("127.0.0.1", 0);
        thread = std::thread([this] { io.run(); });
    }
    ~test_server() {
        srv.stop();
        io.stop();
        thread.join();
    }
};

inline http::fetch_result fetch_sync(unsigned short port, bhttp::verb method, std::string path,
                                     http::fetch_options options = {}) {
    const http::url target{"127.0.0.1", port, ""};
    return http::fetch_blocking(target, method, path, options);
}

// Connects `c` to 127.0.0.1:`port` and sends GET `path`: how the client tests begin.
inline asio::awaitable<void> connect_and_get(http::client_connection& c, unsigned short port,
                                             std::string path) {
    const http::url target{"127.0.0.1", port, ""};
    auto ec = co_await c.connect(target, 2s);
    REQUIRE(!ec);
    http::outgoing_request req{bhttp::verb::get, path, 11};
    ec = co_await c.write(req, 2s);
    REQUIRE(!ec);
}

// Sends raw bytes and returns everything the server answers until it closes (or 2 s pass).
inline std::string raw_exchange(unsigned short port, const std::string& bytes) {
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
inline http::fetch_result fetch_canned(std::string reply) {
    canned_server cs(std::move(reply));
    return fetch_sync(cs.port(), bhttp::verb::get, "/");
}

// Runs `body` as a coroutine on its own io_context until it finishes.
template <class F>
void run_coroutine(F body) {
    asio::io_context io;
    asio::co_spawn(io, body(io.get_executor()), asio::detached);
    io.run();
}

} // namespace lanes::common::http::test
