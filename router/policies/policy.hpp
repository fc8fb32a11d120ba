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
    session_sticky,   // known session, its replica is fine
    session_new,      // new session placed by rendezvous hashing
    session_spill,    // the session's replica is dead, draining or over the load cap
    prefix_match,     // longest cached prefix won
    prefix_imbalance, // load gap too large: least-loaded instead
    prefix_overload,  // best match over the bounded-load cap
    prefix_miss,      // no useful match: least-loaded
    prefix_hash,      // empty index: rendezvous hash of the first blocks
    kv_cost,          // lowest uncached-prefill + load cost
};

std::string_view to_string(route_reason r);

// What a policy knows of a request.
struct route_request {
    std::span<const common::block_hash> blocks; // full-block hashes of the rendered prompt
    std::size_t prompt_tokens = 0;
    std::optional<std::string> session_key;
    std::string_view model;
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
};

struct pool_snapshot {
    std::vector<replica_view> replicas;
};

// Replicas already tried for this request (retries go elsewhere).
using tried_set = std::vector<std::string>;

struct decision {
    std::optional<std::size_t> replica; // index into pool_snapshot::replicas
    route_reason reason = route_reason::round_robin;
    std::size_t matched_blocks = 0; // the policy's predicted cached prefix, in blocks
};

class policy {
public:
    virtual ~policy() = default;
    virtual std::string_view name() const = 0;
    virtual decision pick(const route_request& req, const pool_snapshot& pool,
                          const tried_set& tried) = 0;
    // The request was sent to `replica_id` (after pick, possibly on a retry).
    virtual void on_routed(const route_request&, const std::string& /*replica_id*/) {}
    virtual void on_request_done(const std::string& /*replica_id*/) {}
    virtual void on_replicas_changed(const pool_snapshot&) {}
};

// Candidates a policy may choose: routable and not yet tried.
bool eligible(const replica_view& r, const tried_set& tried);
// Indices (into pool.replicas) of the eligible replicas, in snapshot order.
std::vector<std::size_t> eligible_indices(const pool_snapshot& pool, const tried_set& tried);

using clock_fn = std::function<std::chrono::steady_clock::time_point()>;

struct policy_options {
    std::uint64_t seed = 0x6c616e6573ULL;
    clock_fn clock = [] { return std::chrono::steady_clock::now(); };
    std::size_t block_size = common::default_block_size;

    // Load score (least_loaded, prefix): inflight + waiting + kv_weight * kv_usage, so a full KV
    // cache counts like kv_weight queued requests.
    double kv_weight = 4.0;
    // Bounded-load cap (session, prefix): a replica may take a request while inflight + 1 <=
    // ceil(load_factor * (total inflight + 1) / eligible replicas).
    double load_factor = 1.25;
    // The same cap for prefix, looser: a request leaves the replica caching its prefix only when
    // that replica holds twice its share. With 1.25 the cap pushed ~9 % of a shared-prefix run's
    // requests off their cached replica, which then cached a second copy of the prefix and evicted
    // others (docs/results.md, C64: hit rate 0.56 at 1.25, 0.68 at 2, imbalance 1.00 / 1.03).
    double prefix_load_factor = 2.0;
    // No replica counts as over the bounded-load cap below this many requests in flight.
    std::int64_t load_cap_floor = 4;
    // prefix: least-loaded instead when (max - min) load > abs AND max > rel * min (SGLang).
    double balance_abs_threshold = 64.0;
    double balance_rel_threshold = 1.5;
    // prefix: a match shorter than this fraction of the request's blocks is a miss.
    double min_match_ratio = 0.3;
    // prefix, kv_aware: blocks remembered per replica when it does not report num_blocks.
    std::size_t index_capacity = 65536;
    // prefix, kv_aware: leading blocks whose hash places a request by rendezvous hashing.
    std::size_t hash_prefix_blocks = 4;
    // kv_aware: cost = overlap_weight * uncached blocks + decode load (Dynamo).
    double overlap_weight = 1.0;
    // session: idle time after which a session is forgotten, and the most sessions remembered.
    std::chrono::milliseconds session_ttl = std::chrono::minutes(30);
    std::size_t session_capacity = 100000;
};

// The one factory: maps a policy name to a policy. Config validation uses it too, so an unknown
// name fails before anything listens. Returns nullptr for an unknown name.
std::unique_ptr<policy> make_policy(std::string_view name, const policy_options& options);
// Every name make_policy accepts, for messages and --help.
const std::vector<std::string>& policy_names();

} // namespace lanes::router
