// lanes-sse-client: the streaming benchmark's client (bench/scripts/streaming.py). Opens --streams
// concurrent streaming requests (--ramp new ones a millisecond at most), each on its own
// connection, reads each text/event-stream to its end, and for every event with a "t" field (the
// source's monotonic clock when it wrote it) records now - t: the event's latency from source to
// client, whatever relayed it. Writes a JSON report: events, streams done and failed, events a
// second, latency percentiles (over the whole run, and after every stream has answered).
#include "common/config_util.hpp"
#include "common/http/server.hpp"

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>

#include <array>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

struct client_config {
    std::string host = "127.0.0.1";
    unsigned short port = 8000;
    std::int64_t streams = 100;
    std::int64_t ramp = 20; // streams started per millisecond
    std::string out = "streaming.json";
    std::chrono::milliseconds hold{0}; // report the streams open after this long, then go on
};

std::int64_t mono_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
}

// Latencies in microseconds: 1 us buckets below 10 ms, then 100 us buckets up to 10 s.
class histogram {
public:
    void add(std::int64_t us) {
        ++count_;
        if (us < 0)
            us = 0;
        if (us < fine)
            ++fine_[static_cast<std::size_t>(us)];
        else
            ++coarse_[static_cast<std::size_t>(
                std::min<std::int64_t>((us - fine) / 100, coarse - 1))];
        max_ = std::max(max_, us);
    }
    double quantile_ms(double q) const {
        if (count_ == 0)
            return 0;
        const auto want = static_cast<std::uint64_t>(q * static_cast<double>(count_ - 1)) + 1;
        std::uint64_t seen = 0;
        for (std::size_t i = 0; i < fine_.size(); ++i)
            if ((seen += fine_[i]) >= want)
                return static_cast<double>(i) / 1000.0;
        for (std::size_t i = 0; i < coarse_.size(); ++i)
            if ((seen += coarse_[i]) >= want)
                return static_cast<double>(fine + 100 * static_cast<std::int64_t>(i)) / 1000.0;
        return static_cast<double>(max_) / 1000.0;
    }
    std::uint64_t count() const { return count_; }
    double max_ms() const { return static_cast<double>(max_) / 1000.0; }

private:
    static constexpr std::int64_t fine = 10000;
    static constexpr std::int64_t coarse = 100000;
    std::vector<std::uint64_t> fine_ = std::vector<std::uint64_t>(fine);
    std::vector<std::uint64_t> coarse_ = std::vector<std::uint64_t>(coarse);
    std::uint64_t count_ = 0;
    std::int64_t max_ = 0;
};

struct state {
    const client_config& cfg;
    tcp::endpoint target;
    histogram latency;
    // The same from the moment every stream has had its first event: the steady phase, without
    // the burst of connections opening (which loads the proxy more than the events do).
    histogram after_open;
    std::int64_t answering = 0, all_open_ns = 0;
    std::int64_t done = 0, failed = 0, open = 0, max_open = 0;
    std::string first_error;
    std::int64_t first_event_ns = 0, last_event_ns = 0;
    // Per 10 ms of the run since the first event: events seen and the slowest one (us), which
    // tells a stall of the whole path (every stream late at once) from one stream's queueing.
    std::vector<std::pair<std::int64_t, std::int64_t>> windows;
    static constexpr std::int64_t window_ns = 10'000'000;
    // 1,000 s of windows; later events count in the percentiles only.
    static constexpr std::size_t max_windows = 100'000;
};

// Reads one chunked (or close-delimited) event stream; counts each event's latency.
asio::awaitable<void> one_stream(state& st) {
    auto ex = co_await asio::this_coro::executor;
    tcp::socket sock(ex);
    boost::system::error_code ec;
    const auto fail = [&st](std::string what) {
        ++st.failed;
        if (st.first_error.empty())
            st.first_error = std::move(what);
    };
    co_await sock.async_connect(st.target, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
        fail("connect: " + ec.message());
        co_return;
    }
    sock.set_option(tcp::no_delay(true), ec);
    ++st.open;
    st.max_open = std::max(st.max_open, st.open);
    static const std::string body =
        R"({"model":"sse-source","prompt":"hi","max_tokens":16,"stream":true})";
    const std::string req = "POST /v1/completions HTTP/1.1\r\nhost: bench\r\ncontent-type: "
                            "application/json\r\ncontent-length: " +
                            std::to_string(body.size()) + "\r\n\r\n" + body;
    co_await asio::async_write(sock, asio::buffer(req),
                               asio::redirect_error(asio::use_awaitable, ec));
    std::string raw, events;
    bool head_done = false, chunked = false, finished = false, answered = false;
    std::array<char, 8192> tmp{};
    while (!ec && !finished) {
        const std::size_t n = co_await sock.async_read_some(
            asio::buffer(tmp), asio::redirect_error(asio::use_awaitable, ec));
        raw.append(tmp.data(), n);
        if (!head_done) {
            const auto end = raw.find("\r\n\r\n");
            if (end == std::string::npos)
                continue;
            std::string head = raw.substr(0, end);
            if (!head.starts_with("HTTP/1.1 200")) {
                --st.open;
                fail("status: " + head.substr(0, head.find('\r')));
                co_return;
            }
            for (auto& c : head)
                c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
            chunked = head.find("transfer-encoding: chunked") != std::string::npos;
            raw.erase(0, end + 4);
            head_done = true;
        }
        // De-chunk what is complete.
        if (chunked) {
            for (;;) {
                const auto line = raw.find("\r\n");
                if (line == std::string::npos)
                    break;
                std::size_t size = 0;
                std::from_chars(raw.data(), raw.data() + line, size, 16);
                if (raw.size() < line + 2 + size + 2)
                    break;
                if (size == 0) {
                    finished = true;
                    break;
                }
                events.append(raw, line + 2, size);
                raw.erase(0, line + 2 + size + 2);
            }
        } else {
            events += raw;
            raw.clear();
        }
        for (std::size_t end; (end = events.find("\n\n")) != std::string::npos;) {
            const std::string_view ev(events.data(), end);
            if (const auto at = ev.find("\"t\":"); at != std::string_view::npos) {
                std::int64_t t = 0;
                std::from_chars(ev.data() + at + 4, ev.data() + ev.size(), t);
                const std::int64_t now = mono_ns();
                st.latency.add((now - t) / 1000);
                if (!answered) {
                    answered = true;
                    if (++st.answering == st.cfg.streams)
                        st.all_open_ns = now;
                }
                if (st.all_open_ns != 0)
                    st.after_open.add((now - t) / 1000);
                if (st.first_event_ns == 0)
                    st.first_event_ns = now;
                const auto w =
                    static_cast<std::size_t>((now - st.first_event_ns) / state::window_ns);
                if (w < state::max_windows) {
                    if (st.windows.size() <= w)
                        st.windows.resize(w + 1);
                    ++st.windows[w].first;
                    st.windows[w].second = std::max(st.windows[w].second, (now - t) / 1000);
                }
                st.last_event_ns = now;
            }
            if (ev.find("[DONE]") != std::string_view::npos && !chunked)
                finished = true;
            events.erase(0, end + 2);
        }
    }
    --st.open;
    if (!finished)
        fail("stream: " + (ec ? ec.message() : std::string("ended early")));
    else
        ++st.done;
}

asio::awaitable<void> start_all(state& st) {
    auto ex = co_await asio::this_coro::executor;
    asio::steady_timer timer(ex);
    for (std::int64_t i = 0; i < st.cfg.streams; ++i) {
        if (i > 0 && i % st.cfg.ramp == 0) {
            timer.expires_after(std::chrono::milliseconds(1));
            co_await timer.async_wait(asio::use_awaitable);
        }
        asio::co_spawn(ex, one_stream(st), asio::detached);
    }
}

} // namespace

int main(int argc, char** argv) {
    client_config cfg;
    lanes::common::flag_set f("lanes-sse-client", "Streaming benchmark client (loopback only).");
    f.add("host", cfg.host, "server address (loopback)").value_name("HOST");
    f.add("port", cfg.port, "server port");
    f.add("streams", cfg.streams, "concurrent streams, one connection each");
    f.add("ramp", cfg.ramp, "streams started per millisecond");
    f.add("hold", cfg.hold, "after this long, print how many streams are open (0: never)");
    f.add("out", cfg.out, "JSON report").value_name("PATH");
    auto errors = f.parse(argc, argv);
    if (f.print_if_requested())
        return 0;
    if (cfg.streams < 1 || cfg.ramp < 1)
        errors.push_back("--streams and --ramp must be at least 1");
    if (!errors.empty())
        return lanes::common::report_config_errors("lanes-sse-client", errors);
    lanes::common::http::raise_open_file_limit();
    asio::io_context io(1);
    state st{cfg, {asio::ip::make_address(cfg.host), cfg.port}};
    const auto start = std::chrono::steady_clock::now();
    asio::co_spawn(io, start_all(st), asio::detached);
    asio::steady_timer hold(io);
    if (cfg.hold.count() > 0) {
        hold.expires_after(cfg.hold);
        hold.async_wait([&](boost::system::error_code) {
            std::printf("open %lld\n", static_cast<long long>(st.open));
            std::fflush(stdout);
        });
    }
    io.run();
    const double secs =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const nlohmann::json report = {
        {"streams", cfg.streams},
        {"done", st.done},
        {"failed", st.failed},
        {"first_error", st.first_error},
        {"max_open", st.max_open},
        {"events", st.latency.count()},
        {"seconds", secs},
        // Over the span from the first event to the last (streams that wait before their first
        // event do not dilute it).
        {"events_per_s",
         static_cast<double>(st.latency.count()) /
             std::max(1e-9, static_cast<double>(st.last_event_ns - st.first_event_ns) / 1e9)},
        {"event_seconds", static_cast<double>(st.last_event_ns - st.first_event_ns) / 1e9},
        {"latency_ms",
         {{"p50", st.latency.quantile_ms(0.5)},
          {"p90", st.latency.quantile_ms(0.9)},
          {"p99", st.latency.quantile_ms(0.99)},
          {"max", st.latency.max_ms()}}},
        // Null when a stream never answered.
        {"all_open_s",
         st.all_open_ns == 0
             ? nlohmann::json(nullptr)
             : nlohmann::json(static_cast<double>(st.all_open_ns - st.first_event_ns) / 1e9)},
        {"after_open_events", st.after_open.count()},
        {"after_open_latency_ms", st.after_open.count() == 0
                                      ? nlohmann::json(nullptr)
                                      : nlohmann::json{{"p50", st.after_open.quantile_ms(0.5)},
                                                       {"p90", st.after_open.quantile_ms(0.9)},
                                                       {"p99", st.after_open.quantile_ms(0.99)},
                                                       {"max", st.after_open.max_ms()}}},
        {"windows_10ms", st.windows}};
    std::ofstream(cfg.out) << report.dump(1) << "\n";
    std::printf("%s\n", report.dump().c_str());
    return st.failed == 0 ? 0 : 1;
}
