#include "router/access/rate_limit.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace lanes::router {

namespace {

std::chrono::milliseconds ms_of(double seconds) {
    // Within what the cast can hold (a year is as long as any wait here can sensibly be).
    constexpr double longest = 365.0 * 86'400.0;
    return std::chrono::milliseconds(
        static_cast<std::int64_t>(std::ceil(std::clamp(seconds, 0.0, longest) * 1000.0)));
}

} // namespace

double rate_limiter::rps_for(const key_limits* own) const {
    return own && own->rps ? *own->rps : defaults_.rps;
}

double rate_limiter::burst_for(const key_limits* own) const {
    const double b = own && own->burst ? *own->burst : defaults_.burst;
    return b > 0 ? b : std::max(1.0, std::ceil(rps_for(own)));
}

double rate_limiter::tpm_for(const key_limits* own) const {
    return own && own->tpm ? *own->tpm : defaults_.tpm;
}

limit_verdict rate_limiter::take(bucket& b, double capacity, double per_second, double cost,
                                 clock::time_point now) {
    if (b.fresh) {
        b.fresh = false;
        b.level = capacity;
    } else {
        const double elapsed = std::chrono::duration<double>(now - b.at).count();
        b.level = std::min(capacity, b.level + std::max(0.0, elapsed) * per_second);
    }
    b.at = now;
    limit_verdict v;
    v.state.limit = capacity;
    const double needed = std::min(cost, capacity);
    if (b.level + 1e-9 < needed) {
        v.allowed = false;
        v.retry_after = ms_of((needed - b.level) / per_second);
        v.state.remaining = std::max(0.0, b.level);
        v.state.reset = ms_of((capacity - b.level) / per_second);
        return v;
    }
    // Below zero for a request bigger than the bucket: a debt, of at most one bucket (a request
    // that asks for 2^64 output tokens, which the engine then refuses, costs two periods' wait,
    // not one for ever).
    b.level = std::max(b.level - cost, -capacity);
    v.state.remaining = std::max(0.0, b.level);
    v.state.reset = ms_of((capacity - b.level) / per_second);
    return v;
}

rate_limiter::client_state& rate_limiter::state_of(const std::string& who) {
    auto it = clients_.find(who);
    if (it != clients_.end()) {
        use_order_.splice(use_order_.end(), use_order_, it->second.use);
        return it->second;
    }
    if (clients_.size() >= std::max<std::size_t>(1, defaults_.max_clients)) {
        clients_.erase(clients_.find(*use_order_.front())); // the least recently seen
        use_order_.pop_front();
    }
    it = clients_.emplace(who, client_state{}).first;
    it->second.use = use_order_.insert(use_order_.end(), &it->first);
    return it->second;
}

limit_verdict rate_limiter::take_request(const std::string& who, const key_limits* own) {
    return rps_for(own) > 0 ? take_request(who, own, clock::now()) : limit_verdict{};
}

limit_verdict rate_limiter::take_tokens(const std::string& who, const key_limits* own,
                                        double tokens) {
    return tpm_for(own) > 0 ? take_tokens(who, own, tokens, clock::now()) : limit_verdict{};
}

limit_verdict rate_limiter::take_request(const std::string& who, const key_limits* own,
                                         clock::time_point now) {
    const double rps = rps_for(own);
    if (rps <= 0)
        return {};
    std::lock_guard lock(mutex_);
    return take(state_of(who).requests, burst_for(own), rps, 1.0, now);
}

limit_verdict rate_limiter::peek_request(const std::string& who, const key_limits* own,
                                         clock::time_point now) const {
    const double rps = rps_for(own);
    if (rps <= 0)
        return {};
    std::lock_guard lock(mutex_);
    const auto it = clients_.find(who);
    if (it == clients_.end())
        return {};                  // a new client starts full
    bucket b = it->second.requests; // a copy: nothing is taken
    return take(b, burst_for(own), rps, 1.0, now);
}

limit_verdict rate_limiter::take_tokens(const std::string& who, const key_limits* own,
                                        double tokens, clock::time_point now) {
    const double tpm = tpm_for(own);
    if (tpm <= 0)
        return {};
    std::lock_guard lock(mutex_);
    return take(state_of(who).tokens, tpm, tpm / 60.0, std::max(0.0, tokens), now);
}

std::size_t rate_limiter::clients() const {
    std::lock_guard lock(mutex_);
    return clients_.size();
}

std::string reset_text(std::chrono::milliseconds d) {
    const auto ms = std::max<std::int64_t>(0, d.count());
    if (ms < 1000)
        return std::to_string(ms) + "ms";
    if (ms < 60'000) {
        std::string s = std::to_string(ms / 1000);
        if (const auto rest = ms % 1000; rest != 0) {
            std::string frac = std::to_string(rest + 1000).substr(1); // 3 digits
            while (frac.back() == '0')
                frac.pop_back();
            s += "." + frac;
        }
        return s + "s";
    }
    return std::to_string(ms / 60'000) + "m" + std::to_string((ms % 60'000) / 1000) + "s";
}

} // namespace lanes::router
