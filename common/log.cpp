#include "common/log.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <ctime>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <unistd.h>
#include <unordered_map>
#include <utility>

namespace lanes::common::log {
namespace {

std::atomic<level> g_level{level::info};

// Bytes of lines waiting to be written; past it new lines are dropped.
std::atomic<std::size_t> g_queue_limit{default_queue_bytes};

const char* level_name(level l) {
    switch (l) {
    case level::debug:
        return "DEBUG";
    case level::info:
        return "INFO";
    case level::warn:
        return "WARN";
    case level::error:
        return "ERROR";
    }
    return "?";
}

std::string stamp_now() {
    using namespace std::chrono;
    const auto now = system_clock::now();
    const std::time_t secs = system_clock::to_time_t(now);
    const auto millis = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char stamp[64];
    std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, int(millis));
    return stamp;
}

void write_all(const std::string& text) {
    std::size_t done = 0;
    while (done < text.size()) {
        const auto n = ::write(STDERR_FILENO, text.data() + done, text.size() - done);
        if (n <= 0)
            return; // stderr is gone: nothing else to do with the line
        done += static_cast<std::size_t>(n);
    }
}

// The queue and its writer thread. Made on the first line; at exit it writes what is queued and
// stops, and lines logged after that are written directly.
class writer {
public:
    writer()
        : thread_([this] { run(); }) {}
    ~writer() {
        {
            std::lock_guard lock(mutex_);
            stopping_ = true;
        }
        wake_.notify_all();
        thread_.join();
    }

    void push(std::string line) {
        {
            std::lock_guard lock(mutex_);
            if (queued_bytes_ + line.size() > g_queue_limit.load(std::memory_order_relaxed)) {
                ++dropped_total_;
                ++dropped_unreported_; // (the writer says so once it catches up)
                return;
            }
            queued_bytes_ += line.size();
            queue_.push_back(std::move(line));
            ++pushed_;
        }
        wake_.notify_one();
    }

    void flush() {
        std::unique_lock lock(mutex_);
        const std::uint64_t target = pushed_;
        wake_.notify_one();
        done_.wait(lock, [&] { return written_seq_ >= target && dropped_unreported_ == 0; });
    }

    std::uint64_t dropped() {
        std::lock_guard lock(mutex_);
        return dropped_total_;
    }

private:
    void run() {
        std::unique_lock lock(mutex_);
        for (;;) {
            wake_.wait(lock,
                       [&] { return stopping_ || !queue_.empty() || dropped_unreported_ > 0; });
            if (queue_.empty() && dropped_unreported_ == 0 && stopping_)
                return;
            std::deque<std::string> batch;
            batch.swap(queue_);
            queued_bytes_ = 0;
            const std::uint64_t dropped = dropped_unreported_;
            dropped_unreported_ = 0;
            lock.unlock();
            std::string text;
            for (const auto& line : batch)
                text += line;
            if (dropped > 0)
                text += stamp_now() + " WARN log " + std::to_string(dropped) +
                        " lines dropped: the log could not keep up\n";
            write_all(text);
            lock.lock();
            written_seq_ += batch.size();
            done_.notify_all();
        }
    }

    std::mutex mutex_;
    std::condition_variable wake_, done_;
    std::deque<std::string> queue_;
    std::size_t queued_bytes_ = 0;
    std::uint64_t pushed_ = 0, written_seq_ = 0; // lines queued and written, ever
    std::uint64_t dropped_total_ = 0, dropped_unreported_ = 0;
    bool stopping_ = false;
    std::thread thread_;
};

std::atomic<bool> g_writer_gone{false};

struct writer_holder {
    writer w;
    ~writer_holder() { g_writer_gone.store(true); }
};

writer* the_writer() {
    if (g_writer_gone.load(std::memory_order_acquire))
        return nullptr;
    static writer_holder holder;
    return g_writer_gone.load(std::memory_order_acquire) ? nullptr : &holder.w;
}

} // namespace

void set_level(level l) {
    g_level.store(l);
}

void set_queue_limit(std::size_t bytes) {
    g_queue_limit.store(bytes, std::memory_order_relaxed);
}
level current_level() {
    return g_level.load(std::memory_order_relaxed);
}

bool parse_level(std::string_view text, level& out) {
    if (text == "debug")
        out = level::debug;
    else if (text == "info")
        out = level::info;
    else if (text == "warn")
        out = level::warn;
    else if (text == "error")
        out = level::error;
    else
        return false;
    return true;
}

void write(level l, std::string_view subsystem, std::string_view message) {
    std::string line = stamp_now();
    line.reserve(line.size() + 16 + subsystem.size() + message.size());
    line.append(" ").append(level_name(l)).append(" ");
    line.append(subsystem).append(" ").append(message).append("\n");
    if (writer* w = the_writer())
        w->push(std::move(line));
    else
        write_all(line); // at exit, after the writer stopped
}

void flush() {
    if (writer* w = the_writer())
        w->flush();
}

std::uint64_t dropped() {
    writer* w = the_writer();
    return w ? w->dropped() : 0;
}

bool throttle::admit(std::uint64_t& suppressed) {
    const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count();
    std::int64_t next = next_ns_.load(std::memory_order_relaxed);
    if (now < next || !next_ns_.compare_exchange_strong(next, now + interval_ns_)) {
        held_.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    suppressed = held_.exchange(0, std::memory_order_relaxed);
    return true;
}

struct keyed_throttle::state {
    struct entry {
        std::int64_t next_ns = 0;
        std::uint64_t held = 0;
        std::int64_t seen_ns = 0;
    };
    std::int64_t interval_ns;
    std::size_t max_keys;
    std::mutex mutex;
    std::unordered_map<std::string, entry> entries;
};

keyed_throttle::keyed_throttle(std::int64_t interval_ms, std::size_t max_keys)
    : state_(new state{interval_ms * 1'000'000, std::max<std::size_t>(1, max_keys), {}, {}}) {}

keyed_throttle::~keyed_throttle() {
    delete state_;
}

bool keyed_throttle::admit(std::string_view key, std::uint64_t& suppressed) {
    const std::int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                                 std::chrono::steady_clock::now().time_since_epoch())
                                 .count();
    std::lock_guard lock(state_->mutex);
    auto& entries = state_->entries;
    auto it = entries.find(std::string(key));
    if (it == entries.end()) {
        if (entries.size() >= state_->max_keys) {
            // Forget the key heard of longest ago (a scan, but only on a new key past the cap).
            auto oldest = entries.begin();
            for (auto e = entries.begin(); e != entries.end(); ++e)
                if (e->second.seen_ns < oldest->second.seen_ns)
                    oldest = e;
            entries.erase(oldest);
        }
        it = entries.emplace(std::string(key), state::entry{}).first;
    }
    state::entry& e = it->second;
    e.seen_ns = now;
    if (now < e.next_ns) {
        ++e.held;
        return false;
    }
    e.next_ns = now + state_->interval_ns;
    suppressed = std::exchange(e.held, 0);
    return true;
}

} // namespace lanes::common::log
