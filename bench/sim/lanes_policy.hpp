// A lanes routing policy in the simulator, called as the proxy calls it (router/proxy/chooser.cpp,
// dispatcher.cpp): pick, then on_routed; at the request's end on_outcome (taken) and
// on_request_done. Its clock is the simulator's virtual one.
#pragma once

#include "bench/sim/sim_policy.hpp"

#include <unordered_map>
#include <utility>

namespace lanes::bench::sim {

class lanes_policy final : public sim_policy {
public:
    // Owns `p`, built with the simulator's virtual clock.
    explicit lanes_policy(std::unique_ptr<router::policy> p);
    std::string_view name() const override { return policy_->name(); }
    std::size_t pick(const sim_request& req, const router::pool_snapshot& pool,
                     double now) override;
    void on_routed(const sim_request& req, std::size_t replica, double now) override;
    void on_first_token(const sim_request& req, std::size_t replica, double now) override;
    void on_done(const sim_request& req, std::size_t replica, double now) override;
    std::string_view last_reason() const override { return router::to_string(last_); }

private:
    static router::route_request request_of(const sim_request& req);
    bool pool_changed(const router::pool_snapshot& pool);

    std::unique_ptr<router::policy> policy_;
    std::vector<std::string> ids_;
    std::vector<std::pair<std::uint64_t, std::optional<std::int64_t>>> shape_; // epoch, blocks
    std::unordered_map<std::uint64_t, std::size_t> recorded_; // on_routed's note per request
    router::route_reason last_ = router::route_reason::round_robin;
};

} // namespace lanes::bench::sim
