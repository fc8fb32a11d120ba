// The ids of text runs already encoded, keyed by a 128-bit hash of the run: what lets a
// multi-turn chat tokenize only its new turn (the runs between special tokens encode
// independently, bpe_tokenizer::split_added_tokens). Sharded least-recently-used lists bounded
// by the ids they hold in all (capacity_ids; 0 turns the cache off). Thread-safe.
#pragma once

#include "common/prompt/tokenizer.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

namespace lanes::common {

class segment_cache {
public:
    explicit segment_cache(std::size_t capacity_ids);
    ~segment_cache();
    segment_cache(const segment_cache&) = delete;
    segment_cache& operator=(const segment_cache&) = delete;

    // Appends the run's cached ids to `out` and returns true, or returns false.
    bool find(std::string_view run, std::vector<token_id>& out) const;
    void insert(std::string_view run, std::span<const token_id> ids) const;

    std::uint64_t hits() const { return hits_.load(std::memory_order_relaxed); }
    std::uint64_t misses() const { return misses_.load(std::memory_order_relaxed); }
    std::size_t capacity_ids() const { return capacity_ids_; }

private:
    struct shard;
    std::size_t capacity_ids_;
    std::unique_ptr<shard[]> shards_;
    mutable std::atomic<std::uint64_t> hits_{0};
    mutable std::atomic<std::uint64_t> misses_{0};
};

} // namespace lanes::common
