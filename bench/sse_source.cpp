// lanes-sse-source: a cheap SSE event source for the streaming benchmark (bench/scripts/
// streaming.sh). It answers like an OpenAI-compatible engine just enough for a router to take it
// as a replica (/health, /v1/models, /metrics) and answers every POST with a chunked
// text/event-stream of --events completion chunks, one every --interval (0: back to back),
// then `data: [DONE]`. Each chunk carries "t", the monotonic clock in nanoseconds when it was
// written, so a client on the same machine reads each event's latency. No model, no engine:
// it exists to make a proxy relay many small events while costing little itself.
#include "common/config_util.hpp"
#include "common/http/server.hpp"

#include <boost/asio.hpp>

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

struct source_config {
    std::string host = "127.0.0.1";
    unsigned short port = 0;
    std::int64_t events = 100;              // events per stream
    std::chrono::milliseconds interval{10}; // between two events of a stream
    std::int64_t interval_us = -1;          // finer than --interval when set
    std::chrono::milliseconds delay{0};     // before a stream's first event
};

std::int64_t mono_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// One SSE event as one HTTP chunk.
std::string event_chunk(std::int64_t i) {
    char data[200];
    const int n =
        std::snprintf(data, sizeof data,
                      "data: {\"id\":\"cmpl-s\",\"object\":\"text_completion\","
                      "\"model\":\"sse-source\",\"choices\":[{\"index\":0,\"text\":\"%c\","
                      "\"finish_reason\":null}],\"t\":%lld}\n\n",
                      static_cast<char>('a' + i % 26), static_cast<long long>(mono_ns()));
    char head[16];
    const int h = std::snprintf(head, sizeof head, "%x\r\n", n);
    std::string out(head, static_cast<std::size_t>(h));
    out.append(data, static_cast<std::size_t>(n));
    out += "\r\n";
    return out;
}

std::string plain(std::string_view status, std::string_view type, std::string_view body) {
    return "HTTP/1.1 " + std::string(status) + "\r\ncontent-type: " + std::string(type) +
           "\r\ncontent-length: " + std::to_string(body.size()) + "\r\n\r\n" + std::string(body);
}

asio::awaitable<void> session(tcp::socket sock, const source_config& cfg) {
    std::string buf;
    const auto interval = cfg.interval_us >= 0 ? std::chrono::microseconds(cfg.interval_us)
                                               : std::chrono::microseconds(cfg.interval);
    asio::steady_timer timer(sock.get_executor());
    boost::system::error_code ec;
    for (;;) {
        // The head, then as many body bytes as content-length says.
        std::size_t end = 0;
        while ((end = buf.find("\r\n\r\n")) == std::string::npos) {
            if (buf.size() > 65536)
                co_return;
            char tmp[4096];
            const std::size_t n = co_await sock.async_read_some(
                asio::buffer(tmp), asio::redirect_error(asio::use_awaitable, ec));
            if (ec)
                co_return;
            buf.append(tmp, n);
        }
        std::string head = buf.substr(0, end);
        for (auto& c : head)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        std::size_t length = 0;
        if (const auto at = head.find("content-length:"); at != std::string::npos)
            length = std::strtoul(head.c_str() + at + 15, nullptr, 10);
        while (buf.size() < end + 4 + length) {
            char tmp[4096];
            const std::size_t n = co_await sock.async_read_some(
                asio::buffer(tmp), asio::redirect_error(asio::use_awaitable, ec));
            if (ec)
                co_return;
            buf.append(tmp, n);
        }
        const bool post = head.starts_with("post ");
        const std::string path =
            head.substr(head.find(' ') + 1, head.find(' ', 5) - head.find(' ') - 1);
        buf.erase(0, end + 4 + length);
        if (!post) {
            std::string res;
            if (path.starts_with("/v1/models"))
                res = plain("200 OK", "application/json",
                            R"({"object":"list","data":[{"id":"sse-source","object":"model"}]})");
            else if (path.starts_with("/metrics"))
                res = plain("200 OK", "text/plain; version=0.0.4",
                            "vllm:num_requests_running 0\nvllm:num_requests_waiting 0\n"
                            "vllm:kv_cache_usage_perc 0\n");
            else if (path.starts_with("/health"))
                res = plain("200 OK", "text/plain", "");
            else
                res = plain("404 Not Found", "application/json", R"({"error":"not found"})");
            co_await asio::async_write(sock, asio::buffer(res),
                                       asio::redirect_error(asio::use_awaitable, ec));
            if (ec)
                co_return;
            continue;
        }
        static constexpr std::string_view stream_head =
            "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncache-control: no-cache\r\n"
            "transfer-encoding: chunked\r\n\r\n";
        co_await asio::async_write(sock, asio::buffer(stream_head),
                                   asio::redirect_error(asio::use_awaitable, ec));
        if (ec)
            co_return;
        auto next = std::chrono::steady_clock::now() + cfg.delay;
        if (cfg.delay.count() > 0) {
            timer.expires_at(next);
            co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        }
        for (std::int64_t i = 0; i < cfg.events; ++i) {
            if (interval.count() > 0) {
                next += interval;
                timer.expires_at(next);
                co_await timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            }
            const std::string chunk = event_chunk(i);
            co_await asio::async_write(sock, asio::buffer(chunk),
                                       asio::redirect_error(asio::use_awaitable, ec));
            if (ec)
                co_return;
        }
        static constexpr std::string_view done = "e\r\ndata: [DONE]\n\n\r\n0\r\n\r\n";
        co_await asio::async_write(sock, asio::buffer(done),
                                   asio::redirect_error(asio::use_awaitable, ec));
        if (ec)
            co_return;
    }
}

asio::awaitable<void> listen(tcp::acceptor& acceptor, const source_config& cfg) {
    for (;;) {
        boost::system::error_code ec;
        tcp::socket sock =
            co_await acceptor.async_accept(asio::redirect_error(asio::use_awaitable, ec));
        if (ec) {
            if (ec == asio::error::operation_aborted)
                co_return;
            continue; // out of descriptors for a moment: try the next
        }
        sock.set_option(tcp::no_delay(true), ec);
        asio::co_spawn(acceptor.get_executor(), session(std::move(sock), cfg), asio::detached);
    }
}

} // namespace

int main(int argc, char** argv) {
    source_config cfg;
    lanes::common::flag_set f("lanes-sse-source",
                              "SSE event source for streaming benchmarks (no model).");
    f.add("host", cfg.host, "address to listen on (loopback only for benchmarks)")
        .value_name("HOST");
    f.add("port", cfg.port, "port (0: any free one, printed)");
    f.add("events", cfg.events, "events per stream");
    f.add("interval", cfg.interval, "time between a stream's events (0: back to back)");
    f.add("interval-us", cfg.interval_us, "the same in microseconds, over --interval (-1: not set)")
        .value_name("MICROSECONDS");
    f.add("delay", cfg.delay,
          "wait this long before a stream's first event (lets thousands of streams open first)");
    auto errors = f.parse(argc, argv);
    if (f.print_if_requested())
        return 0;
    if (cfg.events < 1)
        errors.push_back("--events must be at least 1");
    if (!errors.empty())
        return lanes::common::report_config_errors("lanes-sse-source", errors);
    lanes::common::http::raise_open_file_limit();
    asio::io_context io(1);
    tcp::acceptor acceptor(io, {asio::ip::make_address(cfg.host), cfg.port});
    acceptor.listen(4096);
    std::printf("listening on http://%s:%u\n", cfg.host.c_str(), acceptor.local_endpoint().port());
    std::fflush(stdout);
    asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](auto, int) { io.stop(); });
    asio::co_spawn(io, listen(acceptor, cfg), asio::detached);
    io.run();
    return 0;
}
