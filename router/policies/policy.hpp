// The routing-policy interface. A policy sees a request (its block hashes, session key, size) and a
// snapshot of the replicas (router/routing.hpp), and returns a replica plus the reason it chose
// it. Policies are
// deterministic under test (RNG and clock come from the constructor), never touch metrics, and
// never learn which other policy the router might hold.
#pragma once

#include "router/routing.hpp"

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace lanes::router {

// A policy's choice is a pure function of its state, the request and the pool: pick() may be
// called to peek (admission asks where a request would go) and changes nothing. What the router
// then does with a choice reaches the policy through the hooks, on_routed first; a policy that
// remembers (a session table, a prefix index, a round-robin position, its random draws) records
// there. This is Envoy's split of peekAnotherHost from chooseHost.
class policy {
public:
    virtual ~policy() = default;
    virtual std::string_view name() const = 0;
    // The replica for `req`, leaving out those in `tried` and those in `full`.
    decision pick(const route_request& req, const pool_snapshot& pool, const tried_set& tried = {},
                  const tried_set& full = {}) const {
        return choose(req, pool, exclusion{tried, full});
    }
    // The request goes to `replica_id` (after pick, possibly on a retry). A policy that learns
    // from it (a prefix index) records it as pending and returns a note on what it recorded,
    // given back to on_outcome.
    virtual std::size_t on_routed(const route_request&, const std::string& /*replica_id*/) {
        return 0;
    }
    // The replica's answer began (a stream's first event, or a whole answer's header): its
    // prefill is over. Called at most once per routed attempt, before on_outcome.
    virtual void on_first_byte(const route_request&, const std::string& /*replica_id*/,
                               std::size_t /*recorded*/) {}
    // How the attempt ended: `ok` when the replica took the request (answered with a status
    // below 400); otherwise what on_routed recorded as pending is dropped.
    virtual void on_outcome(const route_request&, const std::string& /*replica_id*/,
                            std::size_t /*recorded*/, bool /*ok*/) {}
    virtual void on_request_done(const std::string& /*replica_id*/) {}
    // The pool's membership changed, or a replica's capacity (num_blocks) or cache epoch did.
    // Called before the first pick on a pool, and again before a pick on a changed one.
    virtual void on_replicas_changed(const pool_snapshot&) {}

private:
    virtual decision choose(const route_request& req, const pool_snapshot& pool,
                            const exclusion& out) const = 0;
};

using clock_fn = std::function<std::chrono::steady_clock::time_point()>;

// The seed, the clock and every policy's knobs (router/policies/factory.hpp), given to each
// policy's constructor.
struct policy_options;

} // namespace lanes::router
