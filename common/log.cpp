#include "common/log.hpp"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <string>
#include <unistd.h>

namespace lanes::common::log {
namespace {

std::atomic<level> g_level{level::info};

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

} // namespace

void set_level(level l) {
    g_level.store(l);
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
    using namespace std::chrono;
    const auto now = system_clock::now();
    const std::time_t secs = system_clock::to_time_t(now);
    const auto millis = duration_cast<milliseconds>(now.time_since_epoch()).count() % 1000;
    std::tm tm{};
    gmtime_r(&secs, &tm);
    char stamp[64];
    std::snprintf(stamp, sizeof stamp, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                  tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, int(millis));
    std::string line;
    line.reserve(48 + subsystem.size() + message.size());
    line.append(stamp).append(" ").append(level_name(l)).append(" ");
    line.append(subsystem).append(" ").append(message).append("\n");
    // One write(2) per line: atomic with respect to other threads' lines.
    [[maybe_unused]] auto n = ::write(STDERR_FILENO, line.data(), line.size());
}

} // namespace lanes::common::log
