// One replica's health: a circuit breaker fed by active /health probes and by the proxy's own
// results (passive: connect failures, 500/502/504, first-byte timeouts; never backpressure).
// Closed: routable. After `failure_threshold` consecutive failures it opens (the replica is
// ejected) for `open_time`; then it is half-open: the next probe or request decides —
// `success_threshold` consecutive successes close it, one failure reopens it — and requests go to
// it one at a time. An ejection is active when a probe failed since the replica last answered a
// probe, else passive: passive ejections are capped per model (max_ejection_percent), active ones
// are not. A probe that connected but got no answer in time is a slow replica, busy or stuck,
// rather than a gone one: it counts as a failure, but its ejection is capped as a passive one.
// Thread-safe; time is passed in so tests control it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <mutex>

namespace lanes::router {

struct health_config {
    std::int64_t failure_threshold = 3;         // consecutive failures that eject
    std::int64_t success_threshold = 2;         // consecutive successes that re-admit
    std::chrono::milliseconds open_time{5'000}; // ejected before half-open probing
    // Passive ejection takes out at most this share of a model's replicas; past it, the
    // least recently failed ones stay routable (as Envoy's panic threshold).
    std::int64_t max_ejection_percent = 50;
};

// Where a failure was seen: a request, a /health probe that was refused or answered not 200
// (probe), or a probe that connected and timed out waiting for its answer (probe_slow).
enum class failure_origin { request, probe, probe_slow };

// An open breaker, as the cap on passive ejection needs it.
struct ejection {
    bool open = false;     // ejected now (not half-open)
    bool by_probe = false; // a /health probe failed since the last one answered
    std::chrono::steady_clock::time_point last_failure{};
};

enum class breaker_state { closed, open, half_open };

class health_tracker {
public:
    using time_point = std::chrono::steady_clock::time_point;
    explicit health_tracker(health_config cfg = {})
        : cfg_(cfg) {}

    // Returns true when this failure ejected the replica (closed or half-open -> open).
    bool on_failure(time_point now, failure_origin origin = failure_origin::request);
    // Returns true when this success re-admitted the replica (half-open -> closed).
    bool on_success(time_point now, failure_origin origin = failure_origin::request);
    ejection ejection_state(time_point now);
    // Whether requests may go to the replica now (open turns half-open once open_time passed).
    bool routable(time_point now);
    // Whether a new request may go to the replica, which has `inflight` requests now: as
    // routable(), except that a half-open replica takes one trial request at a time, not the
    // whole load an idle-looking replica would draw before the breaker decides.
    bool admits(time_point now, std::int64_t inflight);
    breaker_state state(time_point now);
    void configure(health_config cfg);

private:
    void advance(time_point now); // open -> half_open after open_time
    // Called with the mutex held, after any change.
    void note_clean() {
        clean_.store(state_ == breaker_state::closed && failures_ == 0 && !probe_failed_,
                     std::memory_order_release);
    }

    // Closed with no failure counted: the common case, where a success changes nothing and the
    // replica is routable, answered without the mutex (a proxied request asks both).
    std::atomic<bool> clean_{true};
    std::mutex mutex_;
    health_config cfg_;
    breaker_state state_ = breaker_state::closed;
    std::int64_t failures_ = 0;
    std::int64_t successes_ = 0;
    time_point opened_at_{};
    time_point last_failure_{};
    bool probe_failed_ = false;
};

} // namespace lanes::router
