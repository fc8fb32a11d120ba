// block_table: a map from block hash to a small value, laid out flat for the routing hot path: one
// vector of (hash, value) slots, open addressing with linear probing from a seeded Fibonacci
// home, backward-shift deletion (no tombstones), at most half full. A lookup costs one cache line
// in the common case, where a node-based map costs a division and a dependent miss or two. The
// approximate index (block_lru) and the precise index (KV events) keep their blocks in it.
#pragma once

#include "common/prompt/block_hash.hpp"

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace lanes::router {

// Block hashes come from clients' prompts; a per-process seed keeps anyone from choosing prompts
// whose hashes pile into one probe run.
extern const std::uint64_t block_table_seed;

template <typename V>
class block_table {
public:
    V* find(common::block_hash h) {
        slot* s = slot_of(h);
        return s ? &s->value : nullptr;
    }
    const V* find(common::block_hash h) const {
        const slot* s = slot_of(h);
        return s ? &s->value : nullptr;
    }
    bool contains(common::block_hash h) const { return slot_of(h) != nullptr; }
    // The value for `h`, added as `init` when absent (then true). Adding may move every value:
    // pointers from find() do not survive it.
    std::pair<V*, bool> try_emplace(common::block_hash h, V init = V{}) {
        if (slot* s = slot_of(h))
            return {&s->value, false};
        if ((size_ + 1) * 2 > slots_.size())
            rehash(std::max(min_slots, slots_.size() * 2));
        slot& s = free_slot(h);
        s = {h, std::move(init), true};
        ++size_;
        return {&s.value, true};
    }
    // Removes `h` if present; true when it was.
    bool erase(common::block_hash h) { return extract(h).has_value(); }
    // Removes `h` and gives back its value, if present (one probe where find() then erase() take
    // two).
    std::optional<V> extract(common::block_hash h) {
        slot* s = slot_of(h);
        if (!s)
            return std::nullopt;
        std::optional<V> value(std::move(s->value));
        erase_at(static_cast<std::size_t>(s - slots_.data()));
        return value;
    }
    // Removes every entry for which pred(hash, value) holds; returns how many.
    template <typename Pred>
    std::size_t erase_if(Pred pred) {
        std::vector<slot*> keep;
        for (slot& s : slots_)
            if (s.used && !pred(std::as_const(s.hash), std::as_const(s.value)))
                keep.push_back(&s);
        const std::size_t removed = size_ - keep.size();
        std::vector<slot> old;
        old.swap(slots_);
        size_ = keep.size();
        if (keep.empty()) {
            shift_ = 64;
            return removed;
        }
        allocate(std::max(min_slots, std::bit_ceil(keep.size() * 2)));
        for (slot* s : keep)
            free_slot(s->hash) = std::move(*s);
        return removed;
    }
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    // Drops every entry and the storage.
    void clear() {
        std::vector<slot>().swap(slots_);
        size_ = 0;
        shift_ = 64;
    }

private:
    static constexpr std::size_t min_slots = 16;
    struct slot {
        common::block_hash hash = 0;
        V value{};
        bool used = false;
    };

    std::size_t home(common::block_hash h) const {
        // Fibonacci hashing: the top bits of the product spread whatever bits differ in h.
        return static_cast<std::size_t>(((h ^ block_table_seed) * 0x9E3779B97F4A7C15ULL) >> shift_);
    }
    slot* slot_of(common::block_hash h) {
        return const_cast<slot*>(std::as_const(*this).slot_of(h));
    }
    const slot* slot_of(common::block_hash h) const {
        if (slots_.empty())
            return nullptr;
        const std::size_t mask = slots_.size() - 1;
        for (std::size_t i = home(h);; i = (i + 1) & mask) {
            const slot& s = slots_[i];
            if (!s.used)
                return nullptr;
            if (s.hash == h)
                return &s;
        }
    }
    // The first free slot of `h`'s probe run (there is one: the table is at most half full).
    slot& free_slot(common::block_hash h) {
        const std::size_t mask = slots_.size() - 1;
        std::size_t i = home(h);
        while (slots_[i].used)
            i = (i + 1) & mask;
        return slots_[i];
    }
    void erase_at(std::size_t i) {
        // Backward-shift deletion: pull later members of the probe run into the hole when their
        // home lies outside the cyclic range (hole, j], so every run stays unbroken.
        const std::size_t mask = slots_.size() - 1;
        std::size_t hole = i;
        for (std::size_t j = (i + 1) & mask; slots_[j].used; j = (j + 1) & mask) {
            const std::size_t k = home(slots_[j].hash);
            const bool stays = hole <= j ? (hole < k && k <= j) : (hole < k || k <= j);
            if (!stays) {
                slots_[hole] = std::move(slots_[j]);
                hole = j;
            }
        }
        slots_[hole] = slot{};
        --size_;
    }
    // A table of `n` slots (a power of two) holding what this one holds.
    void rehash(std::size_t n) {
        std::vector<slot> old;
        old.swap(slots_);
        allocate(n);
        for (slot& s : old)
            if (s.used)
                free_slot(s.hash) = std::move(s);
    }
    // `n` empty slots (a power of two).
    void allocate(std::size_t n) {
        slots_.assign(n, slot{});
        shift_ = 64 - static_cast<std::size_t>(std::countr_zero(n));
    }

    std::vector<slot> slots_;
    std::size_t size_ = 0;
    std::size_t shift_ = 64; // 64 - log2(slots_.size())
};

} // namespace lanes::router
