#include "bench/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace lanes::bench {

double percentile(const std::vector<double>& sorted, double q) {
    if (sorted.empty())
        return 0.0;
    q = std::clamp(q, 0.0, 1.0);
    const double rank = q * static_cast<double>(sorted.size() - 1);
    const auto lo = static_cast<std::size_t>(std::floor(rank));
    const auto hi = std::min(lo + 1, sorted.size() - 1);
    const double frac = rank - static_cast<double>(lo);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

summary summarize(std::vector<double> samples) {
    summary s;
    s.count = samples.size();
    if (samples.empty())
        return s;
    std::sort(samples.begin(), samples.end());
    s.mean =
        std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
    s.p50 = percentile(samples, 0.50);
    s.p90 = percentile(samples, 0.90);
    s.p99 = percentile(samples, 0.99);
    s.max = samples.back();
    return s;
}

} // namespace lanes::bench
