// The routing-policy interface. A policy sees a request (its block hashes, session key, size) and a
// snapshot of the replicas, and returns a replica plus the reason it chose it. Policies are
// deterministic under test (RNG and clock come from the constructor), never touch metrics, and
// never learn which other policy the router might hold.
#pragma once

#include "common/prompt/block_hash.hpp"

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::router {

enum class route_reason {
    round_robin,
    random,
    least_loaded,
    session_sticky,       // known session, its replica is fine
    session_new,          // new session placed by rendezvous hashing
    session_spill,        // the session's replica is dead, draining or over the load cap
    prefix_match,         // longest cached prefix won
    prefix_match_precise, // the same, read from the replica's KV events
    prefix_imbalance,     // load gap too large: least-loaded instead
    prefix_overload,      // best match over the bounded-load cap
    prefix_miss,          // no useful match: least-loaded
    prefix_hash,          // empty index: rendezvous hash of the first blocks
    kv_cost,              // lowest uncached-prefill + load cost
    response_affinity,    // continues a /v1/responses answer on the replica that holds its state
};

std::string_view to_string(route_reason r);

// What a policy knows of a request.
// A request's session as two hashes of its key (the key itself is not kept): `key`, keyed with
// a secret of this process, is what the session table holds (nobody can choose keys that collide
// in it); `place`, the same in every router, is what rendezvous hashing places a new session by
// (so independent routers agree).
struct session_ref {
    std::uint64_t key = 0;
    std::uint64_t place = 0;
};

struct route_request {
    std::span<const common::block_hash> blocks; // full-block hashes of the rendered prompt
    std::size_t prompt_tokens = 0;
    std::optional<session_ref> session;
    std::string_view model;
    // Which snapshot replicas serve the request's model (serves[i] for pool.replicas[i]); empty
    // when every replica does.
    std::span<const char> serves;
};

// What a policy knows of one replica at decision time.
struct replica_view {
    std::string id;            // stable identity (the URL); indices change as replicas come and go
    bool routable = true;      // healthy and not draining
    std::int64_t inflight = 0; // counted by the router
    std::optional<double> kv_usage;      // 0..1 from the last fresh scrape
    std::optional<std::int64_t> waiting; // from the last fresh scrape
    std::optional<std::int64_t> running;
    std::optional<std::int64_t> num_blocks; // KV capacity in blocks, when known
    // Moves on whenever the replica's cache is known to be lost (a restart, an ejection): what a
    // policy remembers of it from before is stale.
    std::uint64_t epoch = 0;
};

struct pool_snapshot {
    std::vector<replica_view> replicas;
};

// Replicas by id: those already tried for this request (a retry goes elsewhere), or those at
// their in-flight or queue cap (admission holds requests back for them meanwhile).
using tried_set = std::vector<std::string>;

// What a choice leaves out, the two kinds kept apart: the retry loop alone adds to `tried`.
struct exclusion {
    const tried_set& tried;
    const tried_set& full;
};

struct decision {
    std::optional<std::size_t> replica; // index into pool_snapshot::replicas
    route_reason reason = route_reason::round_robin;
    std::size_t matched_blocks = 0; // the policy's predicted cached prefix, in blocks
};

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

// Candidates a policy may choose: routable, serving the request's model, neither tried nor full.
bool eligible(const pool_snapshot& pool, std::size_t i, const route_request& req,
              const tried_set& tried, const tried_set& full = {});
// Indices (into pool.replicas) of the eligible replicas, in snapshot order.
std::vector<std::size_t> eligible_indices(const pool_snapshot& pool, const route_request& req,
                                          const tried_set& tried, const tried_set& full = {});

using clock_fn = std::function<std::chrono::steady_clock::time_point()>;

// The seed, the clock and every policy's knobs (router/policies/factory.hpp), given to each
// policy's constructor.
struct policy_options;

} // namespace lanes::router
