// Which failed attempts are tried again on another replica (--retry-on). By default only those
// that cannot still be running anywhere: the replica could not be reached, it closed or reset the
// connection before any byte of an answer (it died, or the pooled connection was stale), or it
// pushed back (429, 503). Not a first-byte timeout (it may still be generating), a 5xx answer
// (it ran the request), nor an answer cut, malformed or too big (it ran it too): retrying those
// would run the same expensive request again, as nginx refuses to without non_idempotent.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace lanes::router {

enum class failure_class : unsigned {
    none = 0,
    connect = 1u << 0,      // no connection (refused, unreachable, connect timeout, local error)
    reset = 1u << 1,        // closed or reset before any byte of an answer
    backpressure = 1u << 2, // 429 or 503
    status_5xx = 1u << 3,   // another 5xx answer
    timeout = 1u << 4,      // no answer within --first-byte-timeout
    broken = 1u << 5,       // an answer cut, malformed, or over --upstream-body-limit
};

class retry_policy {
public:
    static constexpr std::string_view default_names = "connect-failure,reset,backpressure";

    retry_policy() = default; // the default: connect-failure, reset, backpressure
    // "connect-failure,reset,backpressure,5xx,timeout,broken-answer" (any subset, comma-separated;
    // "none" for no retry); nullopt with `why` for an unknown name.
    static std::optional<retry_policy> parse(std::string_view names, std::string* why = nullptr);
    bool allows(failure_class c) const { return (mask_ & static_cast<unsigned>(c)) != 0; }

private:
    explicit retry_policy(unsigned mask)
        : mask_(mask) {}
    unsigned mask_ = static_cast<unsigned>(failure_class::connect) |
                     static_cast<unsigned>(failure_class::reset) |
                     static_cast<unsigned>(failure_class::backpressure);
};

std::string_view to_string(failure_class c);

} // namespace lanes::router
