// Rate limits per client: a token bucket on requests (rps, refilled continuously, holding up to
// burst) and one on tokens per minute (a request costs its prompt tokens plus the output it asks
// for). A request that costs more than a bucket holds passes when the bucket is full and leaves
// it in debt, so a big request is delayed, never refused for ever, and the long-run rate holds.
// A client is an API key's name, or without keys the client's address (an IPv6 one by its /64,
// client_address.hpp). The table of clients is bounded: past max_clients the least recently seen
// client goes, in O(1) (a list in use order beside the table), never a scan under the lock every
// request takes; one seen that long ago has mostly refilled, and would start full anyway.
#pragma once

#include "router/access/api_keys.hpp"

#include <chrono>
#include <cstddef>
#include <list>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

namespace lanes::router {

struct rate_settings {
    double rps = 0;   // requests a second; 0: no request limit
    double burst = 0; // requests a bucket holds; 0: rps (at least 1)
    double tpm = 0;   // tokens a minute; 0: no token limit
    std::size_t max_clients = 100000;
};

// What a bucket says of one request, for the answer's x-ratelimit-* headers.
struct bucket_state {
    double limit = 0;                   // the bucket's capacity
    double remaining = 0;               // what is left after this request (0 when refused)
    std::chrono::milliseconds reset{0}; // until the bucket is full again
};

struct limit_verdict {
    bool allowed = true;
    std::chrono::milliseconds retry_after{0}; // when refused: until the request would pass
    bucket_state state;
};

class rate_limiter {
public:
    using clock = std::chrono::steady_clock;

    explicit rate_limiter(rate_settings defaults)
        : defaults_(defaults) {}

    // The limits that apply to a client: its key's own, else the defaults.
    double rps_for(const key_limits* own) const;
    double burst_for(const key_limits* own) const;
    double tpm_for(const key_limits* own) const;

    // Takes one request from `who`'s request bucket (no limit: always allowed). Without `now`, the
    // clock is read only when a limit applies.
    limit_verdict take_request(const std::string& who, const key_limits* own);
    limit_verdict take_request(const std::string& who, const key_limits* own,
                               clock::time_point now);
    // Whether take_request would refuse `who` now, taking nothing (a look at a request's
    // header before its body is read).
    limit_verdict peek_request(const std::string& who, const key_limits* own,
                               clock::time_point now) const;
    // Takes `tokens` from `who`'s token bucket.
    limit_verdict take_tokens(const std::string& who, const key_limits* own, double tokens);
    limit_verdict take_tokens(const std::string& who, const key_limits* own, double tokens,
                              clock::time_point now);

    std::size_t clients() const;

private:
    struct bucket {
        bool fresh = true; // never used: full
        double level = 0;  // below 0: a debt
        clock::time_point at{};
    };
    struct client_state {
        bucket requests;
        bucket tokens;
        std::list<const std::string*>::iterator use; // its place in use_order_
    };
    // Refills `b` to `now` and takes `cost` when it holds min(cost, capacity).
    static limit_verdict take(bucket& b, double capacity, double per_second, double cost,
                              clock::time_point now);
    client_state& state_of(const std::string& who);

    rate_settings defaults_;
    mutable std::mutex mutex_;
    std::unordered_map<std::string, client_state> clients_;
    std::list<const std::string*> use_order_; // keys of clients_, least recently seen first
};

// OpenAI's form of a duration in x-ratelimit-reset-*: "20ms", "1.5s", "6m0s".
std::string reset_text(std::chrono::milliseconds d);

} // namespace lanes::router
