#include "router/health.hpp"

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

bool health_tracker::on_failure(time_point now) {
    std::lock_guard lock(mutex_);
    advance(now);
    successes_ = 0;
    ++failures_;
    const bool trip = (state_ == breaker_state::closed && failures_ >= cfg_.failure_threshold) ||
                      state_ == breaker_state::half_open;
    if (trip) {
        state_ = breaker_state::open;
        opened_at_ = now;
    }
    return trip;
}

bool health_tracker::on_success(time_point now) {
    std::lock_guard lock(mutex_);
    advance(now);
    failures_ = 0;
    if (state_ != breaker_state::half_open)
        return false;
    if (++successes_ < cfg_.success_threshold)
        return false;
    state_ = breaker_state::closed;
    successes_ = 0;
    return true;
}

bool health_tracker::routable(time_point now) {
    return state(now) != breaker_state::open;
}

breaker_state health_tracker::state(time_point now) {
    std::lock_guard lock(mutex_);
    advance(now);
    return state_;
}

} // namespace lanes::router
