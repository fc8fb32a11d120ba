#include "bench/sim/peers/consistent_ring.hpp"

#include <xxhash.h>

#include <algorithm>

namespace lanes::bench::sim {

void consistent_ring::build(const std::vector<std::string>& ids, std::size_t vnodes) {
    points_.clear();
    workers_ = ids.size();
    for (std::size_t w = 0; w < ids.size(); ++w)
        for (std::size_t k = 0; k < vnodes; ++k) {
            const std::string key = ids[w] + "#" + std::to_string(k);
            points_.emplace_back(XXH3_64bits(key.data(), key.size()), w);
        }
    std::sort(points_.begin(), points_.end());
}

std::size_t consistent_ring::first_at(std::uint64_t h) const {
    const auto it =
        std::lower_bound(points_.begin(), points_.end(), std::make_pair(h, std::size_t{0}));
    return it == points_.end() ? 0 : static_cast<std::size_t>(it - points_.begin());
}

} // namespace lanes::bench::sim
