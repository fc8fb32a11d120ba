// Where a request goes: under one lock, the replica snapshot brought up to date (the policies
// told when it changed), the replicas that serve the request's model, those at their cap left
// out, and the routing policy's choice (or the least-loaded one's, for the endpoints not routed
// on), recorded with the policy and counted in flight. Admission asks it, without moving any
// policy, how much room the replicas have and where a waiting request would go.
#pragma once

#include "router/fleet/replica_pool.hpp"
#include "router/fleet/snapshot.hpp"
#include "router/index/ideal_cache.hpp"
#include "router/policies/policy.hpp"
#include "router/proxy/dispatch_plan.hpp"
#include "router/proxy/proxy_config.hpp"
#include "router/ui/live_state.hpp"

#include <chrono>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace lanes::router {

class router_metrics;

// A choice for one attempt.
struct pick_result {
    decision d;
    std::shared_ptr<replica> chosen; // counted in flight: release with an inflight_guard
    policy* by = nullptr;            // the policy that chose (or recorded the pinned choice)
    std::size_t recorded = 0;        // what it noted in on_routed, for on_outcome
    bool unknown_model = false;      // no replica serves the model (every list known)
    std::chrono::milliseconds backoff_left{0}; // with no choice: the longest backoff in the way
    std::string unroutable; // with no choice: why, for the client (the model, each cause's count)
    std::vector<weighed_candidate> weighed; // the policy's estimates by replica, for the live page
};

class chooser {
public:
    chooser(const proxy_config& cfg, replica_pool& pool, router_metrics& metrics,
            std::unique_ptr<policy> routing);

    // Chooses a replica for `plan`'s next attempt, leaving out `tried` (and the replicas at their
    // cap), and tells the policy of its choice. `now` is the decision's time, as the caller read
    // it to time the decision.
    pick_result pick(dispatch_plan& plan, const tried_set& tried,
                     std::chrono::steady_clock::time_point now);
    // How many more requests the routable replicas serving `model` (or `replica` alone, when
    // named) can take before each is at its cap; SIZE_MAX when no cap applies or none is
    // routable.
    std::size_t free_slots(const std::string& model, const std::string& replica);
    // The replica the policy would choose for `plan` when that choice has affinity (a matched
    // prefix, a session, a response's state), else ""; with_room: among the replicas below their
    // cap. A peek: the policy is left as it was.
    std::string preferred_replica(const dispatch_plan& plan, bool with_room);
    // The attempt's answer began / ended (attempt_notice's calls), under the policies' lock.
    void first_byte(const pick_result& p, const route_request& rr);
    void finished(const pick_result& p, const route_request& rr, bool first_byte_told, bool taken);
    // Lets go of the replicas the last decision saw, removed ones included.
    void release_snapshot();

private:
    // Brings the snapshot up to date and tells the policies when it changed.
    void refresh_snapshot(std::chrono::steady_clock::time_point now);
    // Whether snapshot replica `i` is at its cap (--replica-max-inflight,
    // --replica-queue-threshold).
    bool at_cap(std::size_t i) const;
    // The snapshot replicas at their cap, by id (none when no cap is set).
    tried_set full_replicas() const;
    // Why no replica of `plan`'s model can take it now: how many serve it and, of those, how
    // many are draining, ejected, backing off, at their cap or already tried.
    std::string why_unroutable(const dispatch_plan& plan, const tried_set& tried,
                               const tried_set& full, std::chrono::steady_clock::time_point now);
    // The request's blocks through the ideal cache, once per request (the hit rate's ideal).
    void count_ideal(dispatch_plan& plan);

    const proxy_config& cfg_;
    router_metrics& metrics_;
    std::mutex mutex_; // guards everything below
    std::unique_ptr<policy> policy_;
    std::unique_ptr<policy> forward_policy_; // least-loaded, for the endpoints not routed on
    snapshot_cache snapshot_;
    std::vector<char> serves_; // which snapshot replicas serve the request's model
    ideal_cache ideal_;
};

} // namespace lanes::router
