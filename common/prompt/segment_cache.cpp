#include "common/prompt/segment_cache.hpp"

#include <xxhash.h>

#include <list>
#include <mutex>
#include <unordered_map>

namespace lanes::common {

namespace {

constexpr std::size_t shard_count = 16;

struct run_key {
    std::uint64_t low = 0;
    std::uint64_t high = 0;
    bool operator==(const run_key&) const = default;
};

struct run_key_hash {
    std::size_t operator()(const run_key& k) const { return static_cast<std::size_t>(k.low); }
};

run_key key_of(std::string_view run) {
    const XXH128_hash_t h = XXH3_128bits(run.data(), run.size());
    return {h.low64, h.high64};
}

} // namespace

struct segment_cache::shard {
    struct entry {
        run_key key;
        std::vector<token_id> ids;
    };
    std::mutex mutex;
    std::list<entry> order; // most recently used first
    std::unordered_map<run_key, std::list<entry>::iterator, run_key_hash> by_key;
    std::size_t ids = 0;
};

segment_cache::segment_cache(std::size_t capacity_ids)
    : capacity_ids_(capacity_ids)
    , shards_(std::make_unique<shard[]>(shard_count)) {}

segment_cache::~segment_cache() = default;

bool segment_cache::find(std::string_view run, std::vector<token_id>& out) const {
    if (capacity_ids_ == 0)
        return false;
    const run_key k = key_of(run);
    shard& s = shards_[k.high % shard_count];
    std::lock_guard lock(s.mutex);
    const auto it = s.by_key.find(k);
    if (it == s.by_key.end()) {
        misses_.fetch_add(1, std::memory_order_relaxed);
        return false;
    }
    s.order.splice(s.order.begin(), s.order, it->second);
    out.insert(out.end(), it->second->ids.begin(), it->second->ids.end());
    hits_.fetch_add(1, std::memory_order_relaxed);
    return true;
}

void segment_cache::insert(std::string_view run, std::span<const token_id> ids) const {
    const std::size_t per_shard = capacity_ids_ / shard_count;
    if (ids.size() > per_shard)
        return; // larger than a shard may hold: never cached
    const run_key k = key_of(run);
    shard& s = shards_[k.high % shard_count];
    std::lock_guard lock(s.mutex);
    if (s.by_key.contains(k))
        return;
    s.order.push_front({k, std::vector<token_id>(ids.begin(), ids.end())});
    s.by_key.emplace(k, s.order.begin());
    s.ids += ids.size();
    while (s.ids > per_shard) {
        s.ids -= s.order.back().ids.size();
        s.by_key.erase(s.order.back().key);
        s.order.pop_back();
    }
}

} // namespace lanes::common
