// prefix_index: the router's guess of which KV blocks each replica holds, learned from its own
// routing decisions (no engine events). Per replica id, an LRU set of block hashes bounded by a
// capacity: the replica's num_blocks when it reports one, else index_knobs' capacity. insert()
// touches a request's blocks from last to first, so the head of a prefix is the most recently used
// and eviction drops the deepest blocks first (as vLLM frees a sequence's blocks tail first).
// match() is the length of the longest leading run of a request's blocks present, which with
// chained block hashes is the cached prefix. The idea is SGLang's approximate radix tree and
// Dynamo's ApproxKvIndexer, flattened to hashes of full blocks.
#pragma once

#include "common/prompt/block_hash.hpp"
#include "router/index/block_lru.hpp"
#include "router/routing.hpp"

#include <cstddef>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

namespace lanes::router {

// The knobs of the index prefix and kv_aware keep, and of how they place a request the index
// knows nothing of.
struct index_knobs {
    // Blocks remembered per replica when it does not report its num_gpu_blocks.
    std::size_t capacity = 65536;
    // A replica that reports num_gpu_blocks is remembered at this many times them. More than 1
    // keeps prefixes a replica still holds (its LRU evicts only blocks no running request
    // holds, later than the index learns of new ones), and sends requests after prefixes it no
    // longer holds: in lanes-bench simulate 2 raised the Mooncake conversation trace's hit rate
    // from 0.259 to 0.268 (8 replicas) and lowered C64's from 0.686 to 0.671 with a cache a
    // quarter of the prompts (docs/results.md).
    double capacity_factor = 1.0;
    // The most of a replica's index one request may fill (with its leading blocks). What a
    // request's blocks evict stays evicted when the replica then refuses it, so this bounds what
    // one refused request costs; a prompt longer than the replica's whole index adds nothing (no
    // engine holds it: vLLM refuses a prompt over max_model_len, which fits in its KV cache).
    double max_request_share = 0.5;
    // Leading blocks whose hash places a request by rendezvous hashing (so that independent
    // routers agree while their indexes are empty).
    std::size_t hash_prefix_blocks = 4;
};

class prefix_index {
public:
    explicit prefix_index(std::size_t default_capacity, double capacity_factor = 1.0,
                          double max_request_share = 1.0)
        : default_capacity_(default_capacity)
        , capacity_factor_(capacity_factor)
        , max_request_share_(max_request_share) {}
    explicit prefix_index(const index_knobs& knobs)
        : prefix_index(knobs.capacity, knobs.capacity_factor, knobs.max_request_share) {}

    // What insert() found and did: the leading run of the blocks held already, and the leading
    // blocks recorded (touched or added), at least `held`.
    struct insertion {
        std::size_t held = 0;
        std::size_t recorded = 0;
    };
    // Records that `replica` now holds `blocks` (most recently used): their leading run already
    // held, and at most the request share of its capacity in all (none beyond that run when
    // `blocks` are more than its capacity).
    insertion insert(const std::string& replica, std::span<const common::block_hash> blocks);
    // Forgets that `replica` holds `blocks`.
    void erase(const std::string& replica, std::span<const common::block_hash> blocks);
    // The end of a request insert() recorded (`held`: what insert returned): when the replica
    // did not take it (`ok` false), the blocks it added are forgotten again.
    void settle(const std::string& replica, std::span<const common::block_hash> blocks,
                std::size_t held, bool ok);
    // The number of leading `blocks` held by `replica`.
    std::size_t match(const std::string& replica, std::span<const common::block_hash> blocks) const;

    // Sets every snapshot replica's capacity (num_blocks when known, else the default), evicting
    // what no longer fits, forgets what it held of a replica whose epoch moved (its cache was
    // lost), and binds the snapshot: match_at and size_at then take indices into
    // pool.replicas without looking replicas up by id. A policy calls this from
    // on_replicas_changed, when the snapshot's replicas, capacities or epochs change.
    void update_capacities(const pool_snapshot& pool);
    // (A replica the bound snapshot lacks holds nothing: a policy not yet told of the pool it is
    // asked about routes as if its index were empty, never out of bounds.)
    std::size_t match_at(std::size_t i, std::span<const common::block_hash> blocks) const {
        return i < bound_.size() ? longest_run(*bound_[i], blocks) : 0;
    }
    std::size_t size_at(std::size_t i) const { return i < bound_.size() ? bound_[i]->size() : 0; }
    std::size_t capacity_at(std::size_t i) const {
        return i < bound_.size() ? bound_[i]->capacity() : 0;
    }
    // Forgets the replicas the snapshot lacks.
    void retain(const pool_snapshot& pool);
    void forget(const std::string& replica);

    std::size_t size(const std::string& replica) const;
    std::size_t capacity(const std::string& replica) const;
    // True when no replica holds any block.
    bool empty() const;

private:
    static std::size_t longest_run(const block_lru& set,
                                   std::span<const common::block_hash> blocks);
    // How many leading blocks of a request insert() records in a set of `capacity`.
    std::size_t recordable(std::size_t capacity, std::size_t blocks, std::size_t held) const;
    block_lru& replica_set(const std::string& replica);
    void unbind();

    std::size_t default_capacity_;
    double capacity_factor_;
    double max_request_share_;
    std::unordered_map<std::string, block_lru> replicas_; // nodes: pointers stay valid
    // The last snapshot bound by update_capacities: its replica ids and their sets.
    std::vector<std::string> bound_ids_;
    std::vector<block_lru*> bound_;
    std::unordered_map<std::string, std::uint64_t> epochs_; // each replica's, as last seen
    std::vector<std::uint64_t*> bound_epochs_;
};

} // namespace lanes::router
