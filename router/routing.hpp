// The routing vocabulary every part of the router shares: what a policy knows of a request
// (route_request) and of each replica (replica_view, in a pool_snapshot), what it decides
// (decision, with a route_reason), and what a choice leaves out (the tried and full sets). It
// depends on nothing else of the router, so the fleet, the request readers, the indexes and the
// policies can all speak it without including each other.
#pragma once

#include "common/prompt/block_hash.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
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
    prefix_overload,      // a replica holding less of the prompt won (its queue or the cap)
    prefix_miss,          // nothing of the prompt cached anywhere
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
// A replica's costs, fitted online from its metrics (fleet/prefill_fit.hpp): a prefill takes
// about per_request_s + per_token_s x its uncached prompt tokens there, once scheduled; it
// finishes finish_rate requests a second, which is how soon a slot frees there.
struct prefill_cost {
    double per_request_s = 0;
    double per_token_s = 0;
    double finish_rate = 0; // requests a second
};

struct replica_view {
    std::string id;            // stable identity (the URL); indices change as replicas come and go
    bool routable = true;      // healthy and not draining
    std::int64_t inflight = 0; // counted by the router
    std::optional<double> kv_usage;      // 0..1 from the last fresh scrape
    std::optional<std::int64_t> waiting; // from the last fresh scrape
    std::optional<std::int64_t> running;
    std::optional<std::int64_t> num_blocks;   // KV capacity in blocks, when known
    std::optional<prefill_cost> prefill;      // from the last fresh scrapes, once fitted
    std::optional<std::int64_t> max_num_seqs; // most requests it runs at once, when known
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

// What a policy that estimates (prefix) weighed for one candidate.
struct candidate_estimate {
    std::size_t replica = 0;  // index into pool_snapshot::replicas
    std::size_t matched = 0;  // its cached prefix, in blocks
    double queued_tokens = 0; // prefill queued there ahead of this request
    double seconds = 0;       // the estimated time to the first token there
};

struct decision {
    std::optional<std::size_t> replica; // index into pool_snapshot::replicas
    route_reason reason = route_reason::round_robin;
    std::size_t matched_blocks = 0;            // the policy's predicted cached prefix, in blocks
    std::vector<candidate_estimate> estimates; // every candidate's, where the policy estimates
};

// Candidates a policy may choose: routable, serving the request's model, neither tried nor full.
bool eligible(const pool_snapshot& pool, std::size_t i, const route_request& req,
              const tried_set& tried, const tried_set& full = {});
// Indices (into pool.replicas) of the eligible replicas, in snapshot order.
std::vector<std::size_t> eligible_indices(const pool_snapshot& pool, const route_request& req,
                                          const tried_set& tried, const tried_set& full = {});

} // namespace lanes::router
