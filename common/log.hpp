// Minimal structured logging: one line per event, "<time> <level> <subsystem> <message>", written
// to stderr with a single write so lines from different threads never interleave.
#pragma once

#include <sstream>
#include <string_view>

namespace lanes::common::log {

enum class level { debug = 0, info = 1, warn = 2, error = 3 };

void set_level(level l);
level current_level();
// Parses "debug", "info", "warn", "error"; false when unknown.
bool parse_level(std::string_view text, level& out);
void write(level l, std::string_view subsystem, std::string_view message);

} // namespace lanes::common::log

// LANES_LOG(info, "http", "listening on " << port); the message is built only when enabled.
#define LANES_LOG(lvl, subsystem, expr)                                                            \
    do {                                                                                           \
        if (::lanes::common::log::level::lvl >= ::lanes::common::log::current_level()) {           \
            std::ostringstream lanes_log_os_;                                                      \
            lanes_log_os_ << expr;                                                                 \
            ::lanes::common::log::write(::lanes::common::log::level::lvl, subsystem,               \
                                        lanes_log_os_.str());                                      \
        }                                                                                          \
    } while (0)
