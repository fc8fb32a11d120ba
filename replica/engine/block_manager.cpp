#include "replica/engine/block_manager.hpp"

#include <algorithm>
#include <string>
#include <unordered_set>

namespace lanes::replica {

block_manager::block_manager(std::size_t num_blocks)
    : blocks_(num_blocks) {
    cached_.reserve(num_blocks);
    for (std::size_t i = 0; i < num_blocks; ++i)
        push_free_tail(static_cast<block_id>(i));
}

void block_manager::push_free_tail(block_id b) {
    auto& blk = blocks_[static_cast<std::size_t>(b)];
    blk.prev = free_tail_;
    blk.next = -1;
    if (free_tail_ >= 0)
        blocks_[static_cast<std::size_t>(free_tail_)].next = b;
    else
        free_head_ = b;
    free_tail_ = b;
    ++free_count_;
}

void block_manager::unlink_free(block_id b) {
    auto& blk = blocks_[static_cast<std::size_t>(b)];
    if (blk.prev >= 0)
        blocks_[static_cast<std::size_t>(blk.prev)].next = blk.next;
    else
        free_head_ = blk.next;
    if (blk.next >= 0)
        blocks_[static_cast<std::size_t>(blk.next)].prev = blk.prev;
    else
        free_tail_ = blk.prev;
    blk.prev = blk.next = -1;
    --free_count_;
}

std::size_t block_manager::count_cached(std::span<const common::block_hash> hashes) const {
    std::size_t n = 0;
    for (const auto h : hashes) {
        if (!cached_.contains(h))
            break;
        ++n;
    }
    return n;
}

std::vector<block_id> block_manager::acquire_cached(std::span<const common::block_hash> hashes,
                                                    std::size_t n) {
    std::vector<block_id> ids;
    ids.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        const block_id b = cached_.at(hashes[i]);
        auto& blk = blocks_[static_cast<std::size_t>(b)];
        if (blk.refs == 0)
            unlink_free(b); // revive an evictable block
        ++blk.refs;
        ids.push_back(b);
    }
    return ids;
}

std::optional<std::vector<block_id>> block_manager::allocate(std::size_t n) {
    if (n > free_count_)
        return std::nullopt;
    std::vector<block_id> ids;
    ids.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
        const block_id b = free_head_;
        unlink_free(b);
        auto& blk = blocks_[static_cast<std::size_t>(b)];
        if (blk.has_hash) { // evict: the cached prefix it held is gone
            auto it = cached_.find(blk.hash);
            if (it != cached_.end() && it->second == b) {
                cached_.erase(it);
                if (record_block_size_ > 0) {
                    auto* last =
                        events_.empty()
                            ? nullptr
                            : std::get_if<common::kv_events::block_removed>(&events_.back());
                    if (!last) {
                        events_.emplace_back(common::kv_events::block_removed{{}, "GPU"});
                        last = &std::get<common::kv_events::block_removed>(events_.back());
                    }
                    last->block_hashes.push_back(common::kv_events::int_hash(blk.hash));
                }
            }
            blk.has_hash = false;
        }
        blk.refs = 1;
        ids.push_back(b);
    }
    return ids;
}

void block_manager::record_events(std::size_t block_size) {
    record_block_size_ = block_size;
    tokens_.assign(block_size * blocks_.size(), 0);
}

void block_manager::append_stored(std::vector<common::kv_events::event>& events, const block& blk,
                                  std::span<const common::token_id> tokens,
                                  std::size_t block_size) {
    namespace ev = common::kv_events;
    const ev::engine_hash parent_hash = ev::int_hash(blk.parent);
    auto* last = events.empty() ? nullptr : std::get_if<ev::block_stored>(&events.back());
    // The next block of the sequence the last event stored: one event for the run, as vLLM's.
    if (blk.first || !last || last->block_hashes.empty() ||
        last->block_hashes.back() != parent_hash) {
        ev::block_stored s;
        if (!blk.first)
            s.parent = parent_hash;
        else if (blk.parent != common::root_block_hash)
            s.cache_salt_hash = blk.parent; // the salt's hash stands in the root's place
        s.block_size = block_size;
        s.medium = "GPU";
        events.emplace_back(std::move(s));
        last = &std::get<ev::block_stored>(events.back());
    }
    last->block_hashes.push_back(ev::int_hash(blk.hash));
    last->token_ids.insert(last->token_ids.end(), tokens.begin(), tokens.end());
}

void block_manager::cache_block(block_id b, common::block_hash h, common::block_hash parent,
                                std::span<const common::token_id> tokens, bool first) {
    auto& blk = blocks_[static_cast<std::size_t>(b)];
    if (blk.has_hash)
        return;
    if (cached_.contains(h))
        return; // an identical block is already shared from elsewhere
    blk.has_hash = true;
    blk.hash = h;
    cached_.emplace(h, b);
    if (record_block_size_ == 0 || tokens.size() != record_block_size_)
        return;
    blk.parent = parent;
    blk.first = first;
    std::copy(tokens.begin(), tokens.end(),
              tokens_.begin() +
                  static_cast<std::ptrdiff_t>(b) * static_cast<std::ptrdiff_t>(record_block_size_));
    append_stored(events_, blk, tokens, record_block_size_);
}

std::vector<common::kv_events::event> block_manager::dump() const {
    std::vector<common::kv_events::event> out;
    if (record_block_size_ == 0)
        return out;
    const auto tokens_of = [&](block_id b) {
        return std::span<const common::token_id>(tokens_).subspan(
            static_cast<std::size_t>(b) * record_block_size_, record_block_size_);
    };
    std::unordered_set<common::block_hash> emitted;
    emitted.reserve(cached_.size());
    std::vector<block_id> chain;
    for (const auto& [hash, id] : cached_) {
        if (emitted.contains(hash))
            continue;
        // Up to the first ancestor already out (or the sequence's head), then down again.
        chain.clear();
        for (block_id b = id;;) {
            chain.push_back(b);
            const block& blk = blocks_[static_cast<std::size_t>(b)];
            if (blk.first)
                break;
            const auto p = cached_.find(blk.parent);
            if (p == cached_.end() || emitted.contains(blk.parent))
                break; // its parent went (the subscriber cannot place it either) or is out
            b = p->second;
        }
        for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
            const block& blk = blocks_[static_cast<std::size_t>(*it)];
            emitted.insert(blk.hash);
            append_stored(out, blk, tokens_of(*it), record_block_size_);
        }
    }
    return out;
}

void block_manager::release(std::span<const block_id> table) {
    for (auto it = table.rbegin(); it != table.rend(); ++it) {
        auto& blk = blocks_[static_cast<std::size_t>(*it)];
        if (--blk.refs == 0)
            push_free_tail(*it);
    }
}

std::optional<common::block_hash> block_manager::hash_of(block_id b) const {
    const auto& blk = blocks_[static_cast<std::size_t>(b)];
    if (!blk.has_hash)
        return std::nullopt;
    return blk.hash;
}

std::string block_manager::check_invariants() const {
    std::size_t on_list = 0;
    block_id prev = -1;
    for (block_id b = free_head_; b >= 0; b = blocks_[static_cast<std::size_t>(b)].next) {
        const auto& blk = blocks_[static_cast<std::size_t>(b)];
        if (blk.refs != 0)
            return "block " + std::to_string(b) + " is on the free list with refs " +
                   std::to_string(blk.refs);
        if (blk.prev != prev)
            return "free list back-link broken at block " + std::to_string(b);
        prev = b;
        if (++on_list > blocks_.size())
            return "free list has a cycle";
    }
    if (on_list != free_count_)
        return "free count " + std::to_string(free_count_) + " but " + std::to_string(on_list) +
               " blocks on the free list";
    std::size_t zero_refs = 0;
    for (std::size_t i = 0; i < blocks_.size(); ++i) {
        const auto& blk = blocks_[i];
        if (blk.refs < 0)
            return "block " + std::to_string(i) + " has negative refs";
        if (blk.refs == 0)
            ++zero_refs;
        if (blk.has_hash) {
            auto it = cached_.find(blk.hash);
            if (it == cached_.end() || it->second != static_cast<block_id>(i))
                return "block " + std::to_string(i) + " has a hash missing from the map";
        }
    }
    if (zero_refs != free_count_)
        return "blocks with zero refs differ from the free count";
    for (const auto& [h, b] : cached_) {
        const auto& blk = blocks_[static_cast<std::size_t>(b)];
        if (!blk.has_hash || blk.hash != h)
            return "hash map points at block " + std::to_string(b) + " that does not hold it";
    }
    return {};
}

} // namespace lanes::replica
