// What the live page (/ui) shows: the latest routing decisions (a bounded ring, recorded as
// requests finish; a request that finds the ring busy is left out rather than made to wait), and
// json(), which adds each replica's state from the pool (health, drain, load, KV usage,
// prefix-cache counters, last error) and its requests by route reason. Thread-safe.
#pragma once

#include "router/fleet/replica_pool.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::router {

// A candidate the policy weighed (the prefix policy's estimate), by replica.
struct weighed_candidate {
    std::string replica;
    double estimate_ms = 0;
    std::size_t cached_blocks = 0;
    double queued_tokens = 0;
};

struct routed_request {
    std::string replica;
    std::string model;
    std::string_view reason; // a route_reason's name (static storage)
    int status = 0;
    std::size_t matched_blocks = 0, blocks = 0;
    double duration_ms = 0;
    std::vector<weighed_candidate> weighed; // empty unless the policy estimates
};

class live_state {
public:
    explicit live_state(std::size_t keep)
        : keep_(keep) {}

    // `ended`: when the request finished (the caller has read the clock for its duration already).
    void record(routed_request r,
                std::chrono::steady_clock::time_point ended = std::chrono::steady_clock::now());
    // Requests by route reason, per replica: replica -> reason -> count.
    using reason_counts =
        std::map<std::string, std::map<std::string, std::uint64_t, std::less<>>, std::less<>>;
    // The page's JSON: {"now", "admin", "requests_total", "replicas": [...], "decisions": [...]}
    // (decisions newest first). `admin`: served on the admin listener (its buttons work there).
    std::string json(const replica_pool& pool, bool admin, const reason_counts& reasons,
                     std::uint64_t requests_total) const;

private:
    struct kept {
        std::chrono::steady_clock::time_point at; // written out as unix seconds
        routed_request r;
    };
    const std::size_t keep_;
    mutable std::mutex mutex_;
    std::deque<kept> latest_;
};

// The page itself: HTML, CSS and JavaScript in one document, no outside resources.
std::string_view live_page_html();

} // namespace lanes::router
