#include "bench/sim/peers/dynamo_kv.hpp"

#include <algorithm>

namespace lanes::bench::sim {

std::size_t dynamo_kv::overlap(std::size_t w, std::span<const common::block_hash> blocks,
                               double now) const {
    if (w >= workers_.size())
        return 0;
    if (knobs_.events)
        return w < ids_.size() && knobs_.events->live(ids_[w])
                   ? knobs_.events->match(ids_[w], blocks)
                   : 0;
    const auto& seen = workers_[w].seen;
    std::size_t n = 0;
    while (n < blocks.size()) {
        const auto it = seen.find(blocks[n]);
        if (it == seen.end() || it->second < now)
            break;
        ++n;
    }
    return n;
}

std::size_t dynamo_kv::pick(const sim_request& req, const router::pool_snapshot& pool, double now) {
    if (workers_.size() != pool.replicas.size())
        workers_.resize(pool.replicas.size());
    if (ids_.size() != pool.replicas.size()) {
        ids_.clear();
        for (const auto& r : pool.replicas)
            ids_.push_back(r.id);
    }
    const double request_blocks =
        static_cast<double>((req.prompt_tokens + block_size_ - 1) / block_size_);
    costs_.assign(workers_.size(), 0);
    overlaps_.assign(workers_.size(), 0);
    double best = 0;
    std::vector<std::size_t> tied;
    for (std::size_t w = 0; w < workers_.size(); ++w) {
        overlaps_[w] = overlap(w, req.blocks, now);
        const double prefill =
            std::max(workers_[w].prefill + request_blocks -
                         knobs_.overlap_weight * static_cast<double>(overlaps_[w]),
                     0.0);
        const double decode = workers_[w].decode + request_blocks;
        costs_[w] = knobs_.prefill_load_scale * prefill + decode;
        if (tied.empty() || costs_[w] < best - 1e-9) {
            best = costs_[w];
            tied.assign(1, w);
        } else if (costs_[w] < best + 1e-9) {
            tied.push_back(w);
        }
    }
    return tied[std::uniform_int_distribution<std::size_t>(0, tied.size() - 1)(rng_)];
}

void dynamo_kv::on_routed(const sim_request& req, std::size_t w, double now) {
    if (w >= workers_.size())
        workers_.resize(w + 1);
    const double request_blocks =
        static_cast<double>((req.prompt_tokens + block_size_ - 1) / block_size_);
    const double cached = w < overlaps_.size() ? static_cast<double>(overlaps_[w]) : 0.0;
    active a{std::max(request_blocks - cached, 0.0), request_blocks, true};
    workers_[w].prefill += a.prefill;
    workers_[w].decode += a.decode;
    requests_[req.id] = a;
    if (knobs_.events)
        return; // the worker's events will say what it stored
    for (const auto h : req.blocks)
        workers_[w].seen[h] = now + knobs_.ttl_s;
    if (now >= next_prune_) {
        for (auto& wk : workers_)
            std::erase_if(wk.seen, [now](const auto& e) { return e.second < now; });
        next_prune_ = now + knobs_.ttl_s / 4;
    }
}

void dynamo_kv::on_first_token(const sim_request& req, std::size_t w, double) {
    const auto it = requests_.find(req.id);
    if (it == requests_.end() || !it->second.prefilling)
        return;
    it->second.prefilling = false;
    workers_[w].prefill = std::max(workers_[w].prefill - it->second.prefill, 0.0);
}

void dynamo_kv::on_done(const sim_request& req, std::size_t w, double now) {
    on_first_token(req, w, now);
    const auto it = requests_.find(req.id);
    if (it == requests_.end())
        return;
    workers_[w].decode = std::max(workers_[w].decode - it->second.decode, 0.0);
    requests_.erase(it);
}

} // namespace lanes::bench::sim
