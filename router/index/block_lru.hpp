// block_lru: a bounded set of block hashes with least-recently-used eviction, laid out flat for the
// routing hot path. Entries live in one vector, linked by index into a recency list; lookups go
// through a block_table (hash -> entry) whose slots carry the hash itself, so `contains` costs one
// cache line in the common case. A list-and-node-map LRU costs two or three dependent cache
// misses per lookup instead, and with many replicas' indexes nothing of it stays in cache.
#pragma once

#include "common/prompt/block_hash.hpp"
#include "router/index/block_table.hpp"

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace lanes::router {

class block_lru {
public:
    explicit block_lru(std::size_t capacity = 0)
        : capacity_(capacity) {}

    bool contains(common::block_hash h) const { return table_.contains(h); }
    // Makes `h` the most recently used entry, adding it (and evicting the least recently used one
    // when full) if absent. Does nothing with capacity 0.
    void touch(common::block_hash h);
    // Makes blocks[0] the most recently used entry, blocks[1] the next, and so on: the same as
    // touching them from last to first, but a run of blocks already adjacent in that order (a
    // prefix seen before) moves as one piece, found by following the list instead of the table.
    // Takes at most capacity() blocks; they should be distinct (chained hashes are).
    void touch_in_order(std::span<const common::block_hash> blocks);
    // Removes `h` if present; true when it was.
    bool erase(common::block_hash h);
    // Changes the capacity; a smaller one drops the least recently used entries.
    void set_capacity(std::size_t capacity);

    std::size_t size() const { return entries_.size(); }
    std::size_t capacity() const { return capacity_; }
    // Hashes from most to least recently used (for tests and diagnostics).
    std::vector<common::block_hash> recency_order() const;

private:
    static constexpr std::uint32_t none = UINT32_MAX;
    struct entry {
        common::block_hash hash;
        std::uint32_t prev; // towards the most recently used
        std::uint32_t next; // towards the least recently used
    };
    // The recency list: a run is first..last linked in that order; `at` none means the head.
    void unlink_run(std::uint32_t first, std::uint32_t last);
    void link_run_after(std::uint32_t first, std::uint32_t last, std::uint32_t at);
    // A fresh entry for `h` (absent): a new one, or the least recently used one when full.
    std::uint32_t take_entry(common::block_hash h);

    std::size_t capacity_;
    std::vector<entry> entries_;
    block_table<std::uint32_t> table_; // hash -> its entry
    std::uint32_t head_ = none;
    std::uint32_t tail_ = none;
};

} // namespace lanes::router
