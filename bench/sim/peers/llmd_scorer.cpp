#include "bench/sim/peers/llmd_scorer.hpp"

#include <xxhash.h>

#include <algorithm>

namespace lanes::bench::sim {

std::vector<std::uint64_t> llmd_scorer::hashes(std::string_view text) const {
    const std::size_t block = knobs_.block_size_tokens * knobs_.chars_per_token;
    // Seed: the model's name (one model here: none named).
    std::uint64_t prev = XXH64("", 0, 0);
    std::vector<std::uint64_t> out;
    for (std::size_t at = 0; at < text.size() && out.size() < knobs_.max_prefix_blocks;
         at += block) {
        const std::string_view part = text.substr(at, block);
        prev = XXH64(part.data(), part.size(), prev);
        out.push_back(prev);
    }
    return out;
}

std::size_t llmd_scorer::pick(const sim_request& req, const router::pool_snapshot& pool, double) {
    const auto& r = pool.replicas;
    pending_ = hashes(req.text);
    std::int64_t qmin = INT64_MAX, qmax = INT64_MIN;
    for (const auto& v : r) {
        const std::int64_t q = v.waiting.value_or(0);
        qmin = std::min(qmin, q);
        qmax = std::max(qmax, q);
    }
    last_.assign(r.size(), {});
    capacity_.resize(r.size());
    for (std::size_t i = 0; i < r.size(); ++i)
        capacity_[i] =
            r[i].num_blocks ? static_cast<std::size_t>(*r[i].num_blocks) : knobs_.lru_capacity;
    double best = -1;
    std::vector<std::size_t> tied;
    for (std::size_t i = 0; i < r.size(); ++i) {
        scores& s = last_[i];
        if (!pending_.empty()) {
            std::size_t matched = 0;
            const auto it = index_.find(i);
            if (it != index_.end())
                while (matched < pending_.size() && it->second.contains(pending_[matched]))
                    ++matched;
            s.prefix = static_cast<double>(matched) / static_cast<double>(pending_.size());
        }
        const std::int64_t q = r[i].waiting.value_or(0);
        s.queue =
            qmax == qmin ? 1.0 : static_cast<double>(qmax - q) / static_cast<double>(qmax - qmin);
        s.kv = 1.0 - std::clamp(r[i].kv_usage.value_or(0.0), 0.0, 1.0);
        const double total = knobs_.prefix_weight * s.prefix + knobs_.queue_weight * s.queue +
                             knobs_.kv_weight * s.kv;
        if (total > best + 1e-12) {
            best = total;
            tied.assign(1, i);
        } else if (total > best - 1e-12) {
            tied.push_back(i);
        }
    }
    return tied[std::uniform_int_distribution<std::size_t>(0, tied.size() - 1)(rng_)];
}

void llmd_scorer::on_routed(const sim_request&, std::size_t replica, double) {
    const std::size_t capacity =
        replica < capacity_.size() ? capacity_[replica] : knobs_.lru_capacity;
    auto [it, fresh] = index_.try_emplace(replica, capacity);
    (void)fresh;
    it->second.touch_in_order(pending_);
}

} // namespace lanes::bench::sim
