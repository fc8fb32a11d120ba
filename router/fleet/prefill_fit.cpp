#include "router/fleet/prefill_fit.hpp"

#include <algorithm>
#include <cmath>

namespace lanes::router {

prefill_fit::prefill_fit(double memory)
    : keep_(1.0 - 1.0 / std::max(memory, 1.0)) {}

void prefill_fit::observe(const counters& now) {
    const bool valid = std::isfinite(now.prefill_seconds) && std::isfinite(now.prefills) &&
                       std::isfinite(now.prompt_tokens) && std::isfinite(now.cached_tokens) &&
                       std::isfinite(now.finished) && std::isfinite(now.at_seconds);
    if (!valid)
        return;
    if (!last_ || now.prefill_seconds < last_->prefill_seconds || now.prefills < last_->prefills ||
        now.prompt_tokens < last_->prompt_tokens || now.cached_tokens < last_->cached_tokens ||
        now.finished < last_->finished) {
        last_ = now; // the first scrape, or a restart: deltas start here
        return;
    }
    // How fast requests leave.
    if (const double dt = now.at_seconds - last_->at_seconds; dt > 0) {
        const double rate = (now.finished - last_->finished) / dt;
        finish_rate_ = rate_seen_ ? keep_ * finish_rate_ + (1 - keep_) * rate : rate;
        rate_seen_ = true;
    }
    const double count = now.prefills - last_->prefills;
    const double seconds = now.prefill_seconds - last_->prefill_seconds;
    // Prompt tokens are counted at the first token, cache hits at admission: over one interval
    // they may disagree a little, never below nothing.
    const double tokens = std::max(0.0, (now.prompt_tokens - last_->prompt_tokens) -
                                            (now.cached_tokens - last_->cached_tokens));
    last_ = now;
    publish_slots();
    if (count <= 0)
        return; // no prefill ended: nothing learnt, nothing forgotten
    cc_ = keep_ * cc_ + count * count;
    ct_ = keep_ * ct_ + count * tokens;
    tt_ = keep_ * tt_ + tokens * tokens;
    cs_ = keep_ * cs_ + count * seconds;
    ts_ = keep_ * ts_ + tokens * seconds;
    refit();
}

void prefill_fit::publish_slots() {
    if (!cost_)
        return;
    cost_->finish_rate = finish_rate_;
}

void prefill_fit::refit() {
    fit_costs();
    publish_slots();
}

void prefill_fit::fit_costs() {
    const double det = cc_ * tt_ - ct_ * ct_;
    // Solved when the two regressors differ enough (relative determinant), and only a
    // non-negative solution is taken; else the share per token of all the time seen.
    if (det > 1e-6 * cc_ * tt_ && det > 0) {
        const double per_request = (cs_ * tt_ - ts_ * ct_) / det;
        const double per_token = (ts_ * cc_ - cs_ * ct_) / det;
        if (per_request >= 0 && per_token >= 0) {
            cost_ = prefill_cost{per_request, per_token, 0};
            return;
        }
    }
    if (ct_ > 0) {
        // seconds per token through the origin: Σ(t·s)/Σ(t·t) — with every request alike, the
        // per-request part is folded into it.
        cost_ = prefill_cost{0.0, std::max(0.0, ts_ / std::max(tt_, 1e-12)), 0};
    } else if (cc_ > 0) {
        cost_ = prefill_cost{std::max(0.0, cs_ / cc_), 0.0, 0}; // only cached prompts so far
    }
}

} // namespace lanes::router
