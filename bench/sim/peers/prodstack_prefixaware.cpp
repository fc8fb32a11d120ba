#include "bench/sim/peers/prodstack_prefixaware.hpp"

#include <xxhash.h>

namespace lanes::bench::sim {

std::vector<std::uint64_t> prodstack_prefixaware::chunks(std::string_view text) const {
    std::vector<std::uint64_t> out;
    std::uint64_t prev = 0;
    for (std::size_t at = 0; at < text.size(); at += knobs_.chunk_chars) {
        const std::string_view part = text.substr(at, knobs_.chunk_chars);
        prev = XXH64(part.data(), part.size(), prev);
        out.push_back(prev);
    }
    return out;
}

double prodstack_prefixaware::qps(std::size_t e, double now) {
    auto& q = arrivals_[e];
    while (!q.empty() && q.front() < now - knobs_.qps_window_s)
        q.pop_front();
    return static_cast<double>(q.size()) / knobs_.qps_window_s;
}

std::size_t prodstack_prefixaware::pick(const sim_request& req, const router::pool_snapshot& pool,
                                        double now) {
    const std::size_t n = pool.replicas.size();
    if (arrivals_.size() != n)
        arrivals_.resize(n);
    pending_ = chunks(req.text);
    // Walk down while some endpoint holds the path; the endpoints at the deepest node win.
    std::vector<char> alive(n, 1);
    std::vector<std::size_t> matched;
    for (const auto h : pending_) {
        const auto it = trie_.find(h);
        if (it == trie_.end())
            break;
        std::vector<std::size_t> here;
        for (std::size_t e = 0; e < n && e < it->second.size(); ++e)
            if (it->second[e] && alive[e])
                here.push_back(e);
        if (here.empty())
            break;
        matched = std::move(here);
    }
    if (!matched.empty()) {
        reason_ = "prefix_match";
        return matched[std::uniform_int_distribution<std::size_t>(0, matched.size() - 1)(rng_)];
    }
    reason_ = "lowest_qps";
    std::size_t best = 0;
    double best_qps = qps(0, now);
    for (std::size_t e = 1; e < n; ++e)
        if (const double v = qps(e, now); v < best_qps) {
            best = e;
            best_qps = v;
        }
    return best;
}

void prodstack_prefixaware::on_routed(const sim_request&, std::size_t replica, double now) {
    if (replica >= arrivals_.size())
        arrivals_.resize(replica + 1);
    arrivals_[replica].push_back(now);
    for (const auto h : pending_) {
        auto& holders = trie_[h];
        if (holders.size() <= replica)
            holders.resize(replica + 1, 0);
        holders[replica] = 1;
    }
}

} // namespace lanes::bench::sim
