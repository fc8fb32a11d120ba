// The KV block pool with automatic prefix caching, as vLLM V1 does it:
// - a fixed pool of blocks; a block referenced by a running sequence is pinned (ref_count > 0);
// - full blocks carry their chained block hash (common/block_hash) in a hash -> block map;
// - a freed block keeps its hash and joins the tail of an LRU free list (a sequence is freed tail
//   first, so its head block, the most shareable, is evicted last);
// - a lookup that finds a free cached block revives it (off the free list, ref_count 1);
// - allocation takes from the free list's head and evicts that block's hash if it had one.
// Single-threaded: owned by the engine thread.
#pragma once

#include "common/kv_events/events.hpp"
#include "common/prompt/block_hash.hpp"

#include <cstdint>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace lanes::replica {

using block_id = std::int32_t;

class block_manager {
public:
    explicit block_manager(std::size_t num_blocks);

    std::size_t num_blocks() const { return blocks_.size(); }
    std::size_t num_free() const { return free_count_; } // includes evictable cached blocks
    std::size_t num_used() const { return blocks_.size() - free_count_; }
    // vLLM's kv_cache_usage_perc: the fraction of blocks held by sequences.
    double usage() const { return static_cast<double>(num_used()) / blocks_.size(); }

    // How many leading hashes are cached right now (no side effects).
    std::size_t count_cached(std::span<const common::block_hash> hashes) const;
    // Takes a reference on each of the first `n` cached blocks (reviving free ones) and returns
    // their ids in order. Precondition: n <= count_cached(hashes).
    std::vector<block_id> acquire_cached(std::span<const common::block_hash> hashes, std::size_t n);
    // `n` fresh blocks (ref_count 1, no hash), or nullopt when fewer than n are free.
    std::optional<std::vector<block_id>> allocate(std::size_t n);
    // Registers a full block's hash so later sequences can share it. A hash already cached in
    // another block is left alone (tables are append-only, as vLLM's). With events recorded,
    // `parent` (the previous block's hash, or for block 0 of a sequence, `first`, its root) and
    // the block's `tokens` go into its BlockStored event: block 0 has no parent, and under a
    // cache_salt (a root other than root_block_hash) carries the root as its salt's hash.
    void cache_block(block_id b, common::block_hash h, common::block_hash parent = 0,
                     std::span<const common::token_id> tokens = {}, bool first = false);
    // From now on, every block cached and every cached block evicted is recorded, in vLLM's
    // event form (consecutive blocks of one sequence in one BlockStored), until take_events().
    void record_events(std::size_t block_size);
    std::vector<common::kv_events::event> take_events() { return std::move(events_); }
    // Every block cached now, as BlockStored events (a parent before its children, runs of one
    // sequence in one event): what a subscriber that starts from an empty cache and applies them
    // knows. Only while events are recorded (empty otherwise).
    std::vector<common::kv_events::event> dump() const;
    // Drops one reference from each block, tail first; blocks reaching zero join the free list.
    void release(std::span<const block_id> table);

    // Invariant check for tests: used + free = total, refcounts >= 0, free list consistent,
    // hash map consistent. Returns an empty string when all hold.
    std::string check_invariants() const;
    // The block caching `h`; precondition: it is cached.
    block_id lookup(common::block_hash h) const { return cached_.at(h); }
    std::int32_t ref_count(block_id b) const { return blocks_[static_cast<std::size_t>(b)].refs; }
    std::optional<common::block_hash> hash_of(block_id b) const;

private:
    struct block {
        std::int32_t refs = 0;
        bool has_hash = false;
        common::block_hash hash = 0;
        block_id prev = -1; // free list links (valid while refs == 0)
        block_id next = -1;
        // While events are recorded: the block's parent hash (block 0: its root) and whether it
        // is block 0 of its sequence; its tokens are in tokens_.
        common::block_hash parent = 0;
        bool first = false;
    };
    // Appends block `b` (hash `h`) to the events: to the last BlockStored when that ends with
    // its parent, else as a new one.
    static void append_stored(std::vector<common::kv_events::event>& events, const block& blk,
                              std::span<const common::token_id> tokens, std::size_t block_size);
    void push_free_tail(block_id b);
    void unlink_free(block_id b);

    std::vector<block> blocks_;
    block_id free_head_ = -1;
    block_id free_tail_ = -1;
    std::size_t free_count_ = 0;
    std::unordered_map<common::block_hash, block_id> cached_;
    std::size_t record_block_size_ = 0;    // 0: no events recorded
    std::vector<common::token_id> tokens_; // record_block_size_ per block, while recording
    std::vector<common::kv_events::event> events_;
};

} // namespace lanes::replica
