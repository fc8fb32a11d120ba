// The fleet's prefix-cache hit rate over a trailing window, from the replicas' own counters as
// the monitor mirrors them: each scrape adds the hit and query tokens a replica reported since its
// last one, and the rate is the hits over the queries added within the window. Samples are kept
// a second apart at most, so the window holds about window-in-seconds of them. Not thread-safe
// (the monitor's one thread).
#pragma once

#include <chrono>
#include <cmath>
#include <deque>

namespace lanes::router {

class hit_window {
public:
    using clock_type = std::chrono::steady_clock;

    explicit hit_window(std::chrono::milliseconds window = std::chrono::seconds(60))
        : window_(window) {}

    // Adds what one scrape reported (tokens) at `now`.
    void add(double hits, double queries, clock_type::time_point now) {
        hits_ += hits;
        queries_ += queries;
        if (samples_.empty())
            samples_.push_back({now - sample_gap, 0.0, 0.0}); // the start: nothing counted yet
        if (now - samples_.back().at >= sample_gap)
            samples_.push_back({now, hits_, queries_});
        else
            samples_.back() = {samples_.back().at, hits_, queries_};
        // The baseline is the newest sample at least a window old; older ones are not needed.
        while (samples_.size() > 2 && now - samples_[1].at >= window_)
            samples_.pop_front();
    }

    // Hits over queries since the baseline (the window's start); NaN when nothing was queried.
    double ratio() const {
        if (samples_.empty())
            return std::nan("");
        const sample& from = samples_.front();
        const double queried = queries_ - from.queries;
        return queried > 0 ? (hits_ - from.hits) / queried : std::nan("");
    }

private:
    static constexpr std::chrono::seconds sample_gap{1};
    struct sample {
        clock_type::time_point at;
        double hits = 0, queries = 0; // running totals at `at`
    };
    std::chrono::milliseconds window_;
    std::deque<sample> samples_;
    double hits_ = 0, queries_ = 0;
};

} // namespace lanes::router
