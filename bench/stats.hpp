// Summary statistics for latency samples: mean and percentiles (linear interpolation between
// closest ranks, as numpy's default), used by lanes-bench's reports.
#pragma once

#include <vector>

namespace lanes::bench {

struct summary {
    std::size_t count = 0;
    double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};

// q in [0, 1]; `sorted` ascending and non-empty.
double percentile(const std::vector<double>& sorted, double q);
summary summarize(std::vector<double> samples);

} // namespace lanes::bench
