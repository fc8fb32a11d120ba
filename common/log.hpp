// Minimal structured logging: one line per event, "<time> <level> <subsystem> <message>". Lines
// go to a bounded queue that a thread of the log's own writes to stderr, so an I/O thread never
// waits on a slow log pipe: when the queue is full a line is dropped and counted, and the writer
// says how many were dropped. A line repeated at one call site can be throttled to one a second.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <sstream>
#include <string>
#include <string_view>

namespace lanes::common::log {

enum class level { debug = 0, info = 1, warn = 2, error = 3 };

void set_level(level l);
level current_level();
// Bytes of lines the queue holds before it drops.
inline constexpr std::size_t default_queue_bytes = 4 * 1024 * 1024;
void set_queue_limit(std::size_t bytes);
// Parses "debug", "info", "warn", "error"; false when unknown.
bool parse_level(std::string_view text, level& out);
void write(level l, std::string_view subsystem, std::string_view message);
// Waits until every line queued so far is written (tests; the end of main).
void flush();
// Lines dropped because the queue was full, since the process started.
std::uint64_t dropped();

// One line per `interval_ms` from one call site: admit() says whether this occurrence is logged,
// and how many were not since the last one that was.
class throttle {
public:
    explicit throttle(std::int64_t interval_ms = 1000)
        : interval_ns_(interval_ms * 1'000'000) {}
    bool admit(std::uint64_t& suppressed);

private:
    const std::int64_t interval_ns_;
    std::atomic<std::int64_t> next_ns_{0};
    std::atomic<std::uint64_t> held_{0};
};

// As throttle, with one budget per key (a replica and what went wrong with it): a first failure
// of each kind is logged at once whatever others are being held back. Keeps at most `max_keys`;
// past it the ones not heard of for longest are forgotten (their held counts with them).
class keyed_throttle {
public:
    explicit keyed_throttle(std::int64_t interval_ms = 1000, std::size_t max_keys = 1024);
    ~keyed_throttle();
    keyed_throttle(const keyed_throttle&) = delete;
    keyed_throttle& operator=(const keyed_throttle&) = delete;
    bool admit(std::string_view key, std::uint64_t& suppressed);

private:
    struct state;
    state* state_;
};

// A log line's text, built in one expression (LANES_LOG's temporary).
class line_builder {
public:
    template <class T>
    line_builder& operator<<(const T& value) {
        os_ << value;
        return *this;
    }
    line_builder& operator<<(std::ostream& (*manipulator)(std::ostream&)) {
        os_ << manipulator;
        return *this;
    }
    line_builder& operator<<(std::ios_base& (*manipulator)(std::ios_base&)) {
        os_ << manipulator;
        return *this;
    }
    std::string str() { return std::move(os_).str(); }

private:
    std::ostringstream os_;
};

} // namespace lanes::common::log

// LANES_LOG(info, "http", "listening on " << port); the message is built only when enabled. The
// stream is a temporary of the call, not a local: in a coroutine, GCC gives every local of the
// body its own slot in the coroutine's heap frame for the coroutine's whole life, and a
// std::ostringstream there would add 376 bytes to every open connection's frames, once per log
// line in them. (Not a lambda either: clang 14 cannot capture structured bindings.)
#define LANES_LOG(lvl, subsystem, expr)                                                            \
    do {                                                                                           \
        if (::lanes::common::log::level::lvl >= ::lanes::common::log::current_level())             \
            ::lanes::common::log::write(::lanes::common::log::level::lvl, subsystem,               \
                                        (::lanes::common::log::line_builder{} << expr).str());     \
    } while (0)

// As LANES_LOG_THROTTLED, at most once per `interval_ms` for each value of `key` (a string) at
// this call site: the first line of each key goes out at once.
#define LANES_LOG_THROTTLED_BY(lvl, subsystem, key, interval_ms, expr)                             \
    do {                                                                                           \
        if (::lanes::common::log::level::lvl >= ::lanes::common::log::current_level()) {           \
            static ::lanes::common::log::keyed_throttle lanes_log_throttle_(interval_ms);          \
            std::uint64_t lanes_log_held_ = 0;                                                     \
            if (lanes_log_throttle_.admit(key, lanes_log_held_))                                   \
                LANES_LOG(lvl, subsystem,                                                          \
                          expr << (lanes_log_held_ ? " (and " : "")                                \
                               << (lanes_log_held_ ? std::to_string(lanes_log_held_) : "")         \
                               << (lanes_log_held_ ? " more like it since the last)" : ""));       \
        }                                                                                          \
    } while (0)

// As LANES_LOG, at most once a second from this call site; the line then says how many like it
// were left out.
#define LANES_LOG_THROTTLED(lvl, subsystem, expr)                                                  \
    do {                                                                                           \
        if (::lanes::common::log::level::lvl >= ::lanes::common::log::current_level()) {           \
            static ::lanes::common::log::throttle lanes_log_throttle_;                             \
            std::uint64_t lanes_log_held_ = 0;                                                     \
            if (lanes_log_throttle_.admit(lanes_log_held_))                                        \
                LANES_LOG(lvl, subsystem,                                                          \
                          expr << (lanes_log_held_ ? " (and " : "")                                \
                               << (lanes_log_held_ ? std::to_string(lanes_log_held_) : "")         \
                               << (lanes_log_held_ ? " more like it since the last)" : ""));       \
        }                                                                                          \
    } while (0)
