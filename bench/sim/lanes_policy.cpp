#include "bench/sim/lanes_policy.hpp"

namespace lanes::bench::sim {

lanes_policy::lanes_policy(std::unique_ptr<router::policy> p)
    : policy_(std::move(p)) {}

router::route_request lanes_policy::request_of(const sim_request& req) {
    router::route_request rr;
    rr.blocks = req.blocks;
    rr.prompt_tokens = req.prompt_tokens;
    rr.session = req.session;
    return rr;
}

bool lanes_policy::pool_changed(const router::pool_snapshot& pool) {
    // What the router's snapshot reports as a change: membership, a cache epoch, a capacity.
    bool changed = ids_.size() != pool.replicas.size();
    for (std::size_t i = 0; !changed && i < pool.replicas.size(); ++i)
        changed = ids_[i] != pool.replicas[i].id || shape_[i].first != pool.replicas[i].epoch ||
                  shape_[i].second != pool.replicas[i].num_blocks;
    if (changed) {
        ids_.clear();
        shape_.clear();
        for (const auto& r : pool.replicas) {
            ids_.push_back(r.id);
            shape_.emplace_back(r.epoch, r.num_blocks);
        }
    }
    return changed;
}

std::size_t lanes_policy::pick(const sim_request& req, const router::pool_snapshot& pool, double) {
    if (pool_changed(pool))
        policy_->on_replicas_changed(pool);
    const router::decision d = policy_->pick(request_of(req), pool);
    last_ = d.reason;
    return d.replica.value_or(0);
}

void lanes_policy::on_routed(const sim_request& req, std::size_t replica, double) {
    recorded_[req.id] = policy_->on_routed(request_of(req), ids_.at(replica));
}

void lanes_policy::on_first_token(const sim_request& req, std::size_t replica, double) {
    const auto it = recorded_.find(req.id);
    policy_->on_first_byte(request_of(req), ids_.at(replica),
                           it == recorded_.end() ? 0 : it->second);
}

void lanes_policy::on_done(const sim_request& req, std::size_t replica, double) {
    const auto it = recorded_.find(req.id);
    const std::size_t recorded = it == recorded_.end() ? 0 : it->second;
    if (it != recorded_.end())
        recorded_.erase(it);
    policy_->on_outcome(request_of(req), ids_.at(replica), recorded, true);
    policy_->on_request_done(ids_.at(replica));
}

} // namespace lanes::bench::sim
