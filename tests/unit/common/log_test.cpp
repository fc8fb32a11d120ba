// Logging: level names, the threshold LANES_LOG checks before it builds a message, and the line
// format "<UTC time> <LEVEL> <subsystem> <message>" written to stderr in one piece, throttled
// lines, and a log that cannot keep up dropping lines instead of blocking its callers.
#include "common/log.hpp"
#include "tests/unit/common/capture_stderr.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <coroutine>
#include <cstdlib>
#include <regex>
#include <string>
#include <thread>
#include <unistd.h>
#include <utility>
#include <vector>

using namespace lanes::common;
using lanes::test::capture_stderr;

namespace {

// Sets the level for one test and puts the old one back.
struct level_guard {
    log::level saved = log::current_level();
    explicit level_guard(log::level l) { log::set_level(l); }
    ~level_guard() { log::set_level(saved); }
};

// A coroutine type that records how large its frames are. It suspends for real and is not
// inlined, so that its frame cannot be elided (clang elides a frame that never outlives an
// inlined call).
struct sized_task {
    struct promise_type {
        static inline std::size_t last_frame = 0;
        static void* operator new(std::size_t n) {
            last_frame = n;
            return std::malloc(n);
        }
        static void operator delete(void* p) { std::free(p); }
        sized_task get_return_object() {
            return sized_task{std::coroutine_handle<promise_type>::from_promise(*this)};
        }
        std::suspend_always initial_suspend() { return {}; }
        std::suspend_always final_suspend() noexcept { return {}; }
        void return_void() {}
        void unhandled_exception() {}
    };
    explicit sized_task(std::coroutine_handle<promise_type> h)
        : handle(h) {}
    sized_task(sized_task&& other) noexcept
        : handle(std::exchange(other.handle, {})) {}
    sized_task& operator=(sized_task&&) = delete;
    ~sized_task() {
        if (handle)
            handle.destroy();
    }
    void run_to_end() {
        while (!handle.done())
            handle.resume();
    }
    std::coroutine_handle<promise_type> handle;
};

[[gnu::noinline]] sized_task with_log_lines(int n) {
    co_await std::suspend_always{};
    LANES_LOG(debug, "test", "one " << n);
    LANES_LOG(debug, "test", "two " << n);
    LANES_LOG_THROTTLED(debug, "test", "three " << n);
    co_await std::suspend_always{};
}

} // namespace

TEST_CASE("parse_level knows the four names and nothing else", "[log]") {
    log::level l = log::level::error;
    CHECK(log::parse_level("debug", l));
    CHECK(l == log::level::debug);
    CHECK(log::parse_level("info", l));
    CHECK(l == log::level::info);
    CHECK(log::parse_level("warn", l));
    CHECK(l == log::level::warn);
    CHECK(log::parse_level("error", l));
    CHECK(l == log::level::error);
    for (const char* bad : {"", "INFO", "Debug", "warning", "err", "info ", "trace", "fatal"}) {
        INFO("'" << bad << "'");
        l = log::level::warn;
        CHECK_FALSE(log::parse_level(bad, l));
        CHECK(l == log::level::warn); // untouched
    }
}

TEST_CASE("set_level sets the threshold current_level reports", "[log]") {
    const level_guard guard(log::level::info);
    CHECK(log::current_level() == log::level::info);
    for (const auto l : {log::level::debug, log::level::warn, log::level::error}) {
        log::set_level(l);
        CHECK(log::current_level() == l);
    }
}

TEST_CASE("LANES_LOG builds and writes a message only at or above the threshold", "[log]") {
    const level_guard guard(log::level::warn);
    int built = 0;
    const auto count = [&built] { return ++built; };
    const std::string out = capture_stderr([&] {
        LANES_LOG(debug, "test", "debug " << count());
        LANES_LOG(info, "test", "info " << count());
        LANES_LOG(warn, "test", "warn " << count());
        LANES_LOG(error, "test", "error " << count());
    });
    CHECK(built == 2); // the two below the threshold were never built
    const std::regex line_re(R"(^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z (\w+) test (.*)$)");
    std::vector<std::string> seen;
    std::size_t start = 0;
    for (std::size_t nl; (nl = out.find('\n', start)) != std::string::npos; start = nl + 1) {
        const std::string line = out.substr(start, nl - start);
        std::smatch m;
        INFO(line);
        REQUIRE(std::regex_match(line, m, line_re));
        seen.push_back(m[1].str() + "|" + m[2].str());
    }
    CHECK(start == out.size()); // every line ends with a newline
    CHECK(seen == std::vector<std::string>{"WARN|warn 1", "ERROR|error 2"});

    log::set_level(log::level::debug);
    const std::string all = capture_stderr([&] { LANES_LOG(debug, "sub", "now " << 42); });
    CHECK(all.ends_with(" DEBUG sub now 42\n"));
    CHECK(built == 2);
}

TEST_CASE("log lines in a coroutine add no string stream to its frame", "[log]") {
    // GCC keeps every local of a coroutine body in the heap frame, one slot each: a stream built
    // in place would add sizeof(std::ostringstream), 376 bytes in libstdc++, per log line to the
    // frame of every coroutine that logs, for as long as it runs (a connection's, a stream's).
    sized_task::promise_type::last_frame = 0;
    sized_task task = with_log_lines(1);
    task.run_to_end();
    CHECK(sized_task::promise_type::last_frame > 0);
    CHECK(sized_task::promise_type::last_frame < sizeof(std::ostringstream));
}

TEST_CASE("write writes one line whatever the threshold, with its level's name", "[log]") {
    const level_guard guard(log::level::error);
    const std::string out = capture_stderr([] {
        log::write(log::level::info, "http", "listening on 8000");
        log::write(log::level::debug, "", "");
    });
    const std::regex re(R"(^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z INFO http listening on )"
                        R"(8000\n\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z DEBUG  \n$)");
    INFO(out);
    CHECK(std::regex_match(out, re));
}

TEST_CASE("a throttled call site logs once a second and counts what it left out", "[log]") {
    const level_guard guard(log::level::info);
    const std::string out = capture_stderr([] {
        for (int i = 0; i < 1000; ++i)
            LANES_LOG_THROTTLED(warn, "http", "accept failed");
    });
    CHECK(out.find("accept failed") != std::string::npos);
    CHECK(out.find('\n') == out.size() - 1); // one line for the thousand
    log::throttle t(50);
    std::uint64_t held = 99;
    CHECK(t.admit(held));
    CHECK(held == 0);
    CHECK_FALSE(t.admit(held));
    CHECK_FALSE(t.admit(held));
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    CHECK(t.admit(held));
    CHECK(held == 2); // the two left out in between
}

TEST_CASE("a log that cannot keep up drops lines instead of blocking the caller", "[log]") {
    const level_guard guard(log::level::info);
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const int saved = ::dup(STDERR_FILENO);
    ::dup2(fds[1], STDERR_FILENO); // a pipe nobody reads: the writer stalls once it is full
    ::close(fds[1]);
    // At most the pipe (64 KiB), the batch the writer holds (up to the queue's limit) and a full
    // queue can take lines in without a drop, whenever the writer thread happens to run: 2 MB
    // through a 256 KiB queue must drop some.
    log::set_queue_limit(256 * 1024);
    const std::uint64_t before = log::dropped();
    const std::string line(1000, 'x');
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < 2000; ++i)
        log::write(log::level::info, "test", line);
    const auto took = std::chrono::steady_clock::now() - start;
    const std::uint64_t dropped = log::dropped() - before;
    log::set_queue_limit(log::default_queue_bytes);
    std::thread reader([fd = fds[0]] {
        char buf[65536];
        while (::read(fd, buf, sizeof buf) > 0) {
        }
    });
    log::flush();
    ::dup2(saved, STDERR_FILENO);
    ::close(saved);
    reader.join();
    ::close(fds[0]);
    CHECK(dropped > 0);
    CHECK(took < std::chrono::seconds(2)); // (blocked, it would never have finished)
}

TEST_CASE("a keyed throttle holds back repeats of each key, not a different key", "[log]") {
    log::keyed_throttle t(60'000, 2);
    std::uint64_t held = 99;
    CHECK(t.admit("r1 refused", held));
    CHECK(held == 0);
    CHECK_FALSE(t.admit("r1 refused", held));
    CHECK_FALSE(t.admit("r1 refused", held));
    // Another replica's failure, or the same replica's new reason, goes out at once.
    CHECK(t.admit("r2 host not found", held));
    CHECK_FALSE(t.admit("r2 host not found", held));
    // Past max_keys the key heard of longest ago is forgotten (r1: heard before r2's repeat).
    CHECK(t.admit("r1 timeout", held));
    CHECK(t.admit("r1 refused", held));
    CHECK(held == 0); // its held count went with it
}

TEST_CASE("a keyed throttle says how many it held back once the interval is over", "[log]") {
    log::keyed_throttle t(20, 8);
    std::uint64_t held = 0;
    CHECK(t.admit("k", held));
    CHECK_FALSE(t.admit("k", held));
    CHECK_FALSE(t.admit("k", held));
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    CHECK(t.admit("k", held));
    CHECK(held == 2);
}
