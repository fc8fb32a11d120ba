// The precise index: per replica, the blocks it says it holds, from its KV-cache events, keyed by
// the router's own chained hash of each block's token ids (from the router's root for the
// replica's model), so nothing depends on the engine's hash function or its PYTHONHASHSEED. The
// engine's hashes are kept only to find the block a BlockRemoved, or a BlockStored's parent,
// names. A replica is `live` while its stream is known complete (from an AllBlocksCleared, or a
// replay from its first batch); the policies use it only then, and the approximate index
// otherwise. Requests just routed to a live replica are expected (pending) for a while, so a
// burst of one prefix stays together before the engine's events confirm it. Thread-safe: the
// subscriber writes, the policies read.
#pragma once

#include "common/kv_events/events.hpp"
#include "common/prompt/block_hash.hpp"
#include "router/index/block_table.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <shared_mutex>
#include <span>
#include <string>
#include <unordered_map>

namespace lanes::router {

struct precise_index_settings {
    // How long a block a request was just routed with counts as held before the replica's
    // events confirm it.
    std::chrono::milliseconds pending_ttl{2'000};
    // Blocks one replica may claim; past it (a replica that never removes) its entries are
    // dropped and it is no longer live.
    std::size_t max_blocks = std::size_t{1} << 22;
};

class precise_index {
public:
    using clock = std::chrono::steady_clock;
    explicit precise_index(precise_index_settings s = {})
        : settings_(s) {}

    // Block 0's parent, in the router's hashes, of a run with no parent (its model's root, with
    // its LoRA adapter or cache salt folded in).
    using root_fn = std::function<common::block_hash(const common::kv_events::block_stored&)>;
    // Applies one batch from `replica`. Stores whose parent it does not know are skipped
    // (counted in `unplaced`).
    void apply(const std::string& replica, const common::kv_events::batch& b,
               const root_fn& root_of, std::size_t* unplaced = nullptr);
    // ... every run from one root.
    void apply(const std::string& replica, const common::kv_events::batch& b,
               common::block_hash root, std::size_t* unplaced = nullptr) {
        apply(
            replica, b, [root](const common::kv_events::block_stored&) { return root; }, unplaced);
    }
    // Forgets all of `replica`'s blocks; `live`: what follows is complete (its cache is empty).
    void reset(const std::string& replica, bool live);
    void set_live(const std::string& replica, bool live);
    void forget(const std::string& replica);

    bool live(const std::string& replica) const;
    // Live and confirmed for `epoch`: the replica's epoch moves when the router sees its cache
    // lost (its counters went back, an ejection), and entries are trusted again only once a batch
    // in sequence (the same stream going on) or a fresh start confirms them.
    bool live(const std::string& replica, std::uint64_t epoch) const;
    void confirm(const std::string& replica, std::uint64_t epoch);
    // The number of leading `blocks` `replica` holds (or is expected to, see expect()).
    std::size_t match(const std::string& replica, std::span<const common::block_hash> blocks,
                      clock::time_point now = clock::now()) const;
    // A request with `blocks` was just routed to `replica`.
    void expect(const std::string& replica, std::span<const common::block_hash> blocks,
                clock::time_point now = clock::now());
    std::size_t size(const std::string& replica) const; // blocks held, pending ones not counted

    // The index as one routing decision reads it: the shared lock taken once for the reading's
    // life, where live(), match() and size() each take it (a decision asks them of every
    // replica). Writes on other threads (the KV-event subscriber's) wait meanwhile; on its own
    // thread, nothing may write (expect(), apply()) while a reading is held.
    class reading {
    public:
        explicit reading(const precise_index& index)
            : index_(index)
            , lock_(index.mutex_) {}
        bool live(const std::string& replica, std::uint64_t epoch) const;
        std::size_t match(const std::string& replica, std::span<const common::block_hash> blocks,
                          clock::time_point now) const;
        std::size_t size(const std::string& replica) const;

    private:
        const precise_index& index_;
        std::shared_lock<std::shared_mutex> lock_;
    };

private:
    struct state {
        bool live = false;
        std::uint64_t epoch = ~std::uint64_t{0}; // the replica epoch its entries are good for
        std::unordered_map<common::kv_events::engine_hash, common::block_hash> by_engine;
        // Two tables, not one slot with both: a slot carrying a copy count and an expiry would
        // make every held block cost twice the memory for the sake of the blocks merely expected.
        block_table<std::uint32_t> held;        // router hash -> copies
        block_table<clock::time_point> pending; // until when
        std::size_t pending_sweep_at = 4096;    // pending's size that sweeps out expired entries
    };
    void clear(state& s);
    // One copy of `h` fewer in `s.held` (gone at none).
    static void release(state& s, common::block_hash h);
    // Under the lock, shared or not.
    const state* find(const std::string& replica) const {
        const auto it = replicas_.find(replica);
        return it == replicas_.end() ? nullptr : &it->second;
    }
    static std::size_t match_in(const state& s, std::span<const common::block_hash> blocks,
                                clock::time_point now);

    precise_index_settings settings_;
    mutable std::shared_mutex mutex_;
    std::unordered_map<std::string, state> replicas_;
};

} // namespace lanes::router
