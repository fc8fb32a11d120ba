// The prefill cost model a router fits online for each replica from what its /metrics already
// say: between two scrapes, the prefills that finished took Δsum seconds in all
// (vllm:request_prefill_time_seconds) for Δcount requests and Δtokens uncached prompt tokens
// (vllm:prompt_tokens_total less vllm:prefix_cache_hits_total). It fits
//     Δsum ≈ per_request_s × Δcount + per_token_s × Δtokens
// by least squares over the recent scrapes (exponential forgetting), so per_request_s follows
// what a step costs there now (its running batch, its KV use) and per_token_s what a prompt
// token adds. Until the two cannot be told apart (every prefill alike), the ratio of the sums
// gives per_token_s alone. Besides, its finished requests a second (vllm:request_success_total,
// averaged as the fit) say how soon a slot frees there.
#pragma once

#include "router/routing.hpp"

#include <optional>

namespace lanes::router {

class prefill_fit {
public:
    struct counters { // cumulative, as scraped
        double prefill_seconds = 0;
        double prefills = 0;
        double prompt_tokens = 0;
        double cached_tokens = 0;
        double finished = 0;   // requests, cumulative
        double at_seconds = 0; // when scraped (any steady origin)
    };

    // `memory`: how many scrapes' evidence counts (the forgetting factor is 1 - 1/memory).
    explicit prefill_fit(double memory = 20.0);

    // A scrape's counters. A counter that went back (the replica restarted) starts the deltas
    // over and keeps the fit.
    void observe(const counters& now);
    // The fitted model; nullopt until prefills have been seen.
    std::optional<prefill_cost> cost() const { return cost_; }

private:
    void refit();
    void fit_costs();
    void publish_slots();

    double keep_;
    std::optional<counters> last_;
    // Decayed sums of the normal equations over (Δcount, Δtokens) -> Δsum.
    double cc_ = 0, ct_ = 0, tt_ = 0, cs_ = 0, ts_ = 0;
    std::optional<prefill_cost> cost_;
    double finish_rate_ = 0;
    bool rate_seen_ = false;
};

} // namespace lanes::router
