#include "bench/sim/peers/kubeai_chwbl.hpp"

#include <xxhash.h>

#include <cmath>

namespace lanes::bench::sim {

std::size_t kubeai_chwbl::pick(const sim_request& req, const router::pool_snapshot& pool, double) {
    const auto& r = pool.replicas;
    if (ring_.workers() != r.size()) {
        std::vector<std::string> ids;
        for (const auto& v : r)
            ids.push_back(v.id);
        ring_.build(ids, knobs_.replication);
    }
    const std::string_view head = req.text.substr(0, knobs_.prefix_char_length);
    std::int64_t total = 0;
    for (const auto& v : r)
        total += v.inflight;
    // The bound of consistent hashing with bounded loads: ceil(c * (m + 1) / n).
    const double limit = std::ceil(knobs_.mean_load_factor * static_cast<double>(total + 1) /
                                   static_cast<double>(r.size()));
    std::size_t pos = ring_.first_at(XXH3_64bits(head.data(), head.size()));
    const std::size_t home = ring_.worker_at(pos);
    for (std::size_t step = 0; step < ring_.size(); ++step, pos = ring_.next(pos)) {
        const std::size_t w = ring_.worker_at(pos);
        if (static_cast<double>(r[w].inflight + 1) <= limit) {
            reason_ = w == home ? "home" : "walked";
            return w;
        }
    }
    reason_ = "all_over";
    return home;
}

} // namespace lanes::bench::sim
