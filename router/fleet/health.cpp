#include "router/fleet/health.hpp"

namespace lanes::router {

void health_tracker::configure(health_config cfg) {
    std::lock_guard lock(mutex_);
    cfg_ = cfg;
}

void health_tracker::advance(time_point now) {
    if (state_ == breaker_state::open && now - opened_at_ >= cfg_.open_time) {
        state_ = breaker_state::half_open;
        successes_ = 0;
    }
}

bool health_tracker::on_failure(time_point now, failure_origin origin) {
    std::lock_guard lock(mutex_);
    advance(now);
    successes_ = 0;
    ++failures_;
    last_failure_ = now;
    if (origin == failure_origin::probe)
        probe_failed_ = true;
    const bool trip = (state_ == breaker_state::closed && failures_ >= cfg_.failure_threshold) ||
                      state_ == breaker_state::half_open;
    if (trip) {
        state_ = breaker_state::open;
        opened_at_ = now;
    }
    note_clean();
    return trip;
}

bool health_tracker::on_success(time_point now, failure_origin origin) {
    if (clean_.load(std::memory_order_acquire))
        return false; // closed, no failures to forget
    std::lock_guard lock(mutex_);
    advance(now);
    failures_ = 0;
    if (origin == failure_origin::probe)
        probe_failed_ = false;
    bool closed_now = false;
    if (state_ == breaker_state::half_open && ++successes_ >= cfg_.success_threshold) {
        state_ = breaker_state::closed;
        successes_ = 0;
        closed_now = true;
    }
    note_clean();
    return closed_now;
}

bool health_tracker::routable(time_point now) {
    if (clean_.load(std::memory_order_acquire))
        return true;
    return state(now) != breaker_state::open;
}

bool health_tracker::admits(time_point now, std::int64_t inflight) {
    if (clean_.load(std::memory_order_acquire))
        return true;
    const breaker_state s = state(now);
    return s == breaker_state::closed || (s == breaker_state::half_open && inflight == 0);
}

ejection health_tracker::ejection_state(time_point now) {
    if (clean_.load(std::memory_order_acquire))
        return {};
    std::lock_guard lock(mutex_);
    advance(now);
    return {state_ == breaker_state::open, probe_failed_, last_failure_};
}

breaker_state health_tracker::state(time_point now) {
    std::lock_guard lock(mutex_);
    advance(now);
    return state_;
}

} // namespace lanes::router
