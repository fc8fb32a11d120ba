#include "router/policies/block_lru.hpp"

#include <algorithm>
#include <bit>
#include <random>

namespace lanes::router {

namespace {

// Block hashes come from clients' prompts; a per-process seed keeps anyone from choosing prompts
// whose hashes pile into one probe run.
const std::uint64_t table_seed = [] {
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}();

constexpr std::size_t min_table = 16;

} // namespace

std::size_t block_lru::home(common::block_hash h) const {
    // Fibonacci hashing: the top bits of the product spread whatever bits differ in h.
    return static_cast<std::size_t>(((h ^ table_seed) * 0x9E3779B97F4A7C15ULL) >> shift_);
}

std::size_t block_lru::find(common::block_hash h) const {
    if (table_.empty())
        return npos;
    const std::size_t mask = table_.size() - 1;
    for (std::size_t s = home(h);; s = (s + 1) & mask) {
        const slot& x = table_[s];
        if (x.entry == none)
            return npos;
        if (x.hash == h)
            return s;
    }
}

void block_lru::insert_slot(common::block_hash h, std::uint32_t e) {
    const std::size_t mask = table_.size() - 1;
    std::size_t s = home(h);
    while (table_[s].entry != none)
        s = (s + 1) & mask;
    table_[s] = {h, e};
}

void block_lru::erase_slot(std::size_t s) {
    // Backward-shift deletion: pull later members of the probe run into the hole when their home
    // lies outside the cyclic range (hole, j], so every run stays unbroken.
    const std::size_t mask = table_.size() - 1;
    std::size_t hole = s;
    for (std::size_t j = (s + 1) & mask; table_[j].entry != none; j = (j + 1) & mask) {
        const std::size_t k = home(table_[j].hash);
        const bool stays = hole <= j ? (hole < k && k <= j) : (hole < k || k <= j);
        if (!stays) {
            table_[hole] = table_[j];
            hole = j;
        }
    }
    table_[hole].entry = none;
}

void block_lru::unlink_run(std::uint32_t first, std::uint32_t last) {
    const std::uint32_t before = entries_[first].prev;
    const std::uint32_t after = entries_[last].next;
    (before == none ? head_ : entries_[before].next) = after;
    (after == none ? tail_ : entries_[after].prev) = before;
}

void block_lru::link_run_after(std::uint32_t first, std::uint32_t last, std::uint32_t at) {
    const std::uint32_t next = at == none ? head_ : entries_[at].next;
    entries_[first].prev = at;
    entries_[last].next = next;
    (at == none ? head_ : entries_[at].next) = first;
    (next == none ? tail_ : entries_[next].prev) = last;
}

void block_lru::grow_table() {
    const std::size_t size = std::max(min_table, table_.size() * 2);
    table_.assign(size, slot{});
    shift_ = 64 - static_cast<std::size_t>(std::countr_zero(size));
    for (std::uint32_t e = 0; e < entries_.size(); ++e)
        insert_slot(entries_[e].hash, e);
}

std::uint32_t block_lru::take_entry(common::block_hash h) {
    std::uint32_t e;
    if (entries_.size() >= capacity_) { // full: the least recently used entry takes `h`
        e = tail_;
        erase_slot(find(entries_[e].hash));
        unlink_run(e, e);
    } else {
        if ((entries_.size() + 1) * 2 > table_.size())
            grow_table();
        e = static_cast<std::uint32_t>(entries_.size());
        entries_.push_back({});
    }
    entries_[e].hash = h;
    insert_slot(h, e);
    return e;
}

void block_lru::touch(common::block_hash h) {
    if (capacity_ == 0)
        return;
    if (const std::size_t s = find(h); s != npos) {
        const std::uint32_t e = table_[s].entry;
        if (e != head_) {
            unlink_run(e, e);
            link_run_after(e, e, none);
        }
        return;
    }
    const std::uint32_t e = take_entry(h);
    link_run_after(e, e, none);
}

void block_lru::touch_in_order(std::span<const common::block_hash> blocks) {
    if (capacity_ == 0)
        return;
    blocks = blocks.first(std::min(blocks.size(), capacity_));
    std::uint32_t placed = none; // the last entry put in order; none: nothing yet
    std::size_t i = 0;
    while (i < blocks.size()) {
        const std::size_t s = find(blocks[i]);
        if (s == npos) {
            const std::uint32_t e = take_entry(blocks[i]);
            link_run_after(e, e, placed);
            placed = e;
            ++i;
            continue;
        }
        const std::uint32_t first = table_[s].entry;
        if (first == placed) { // a repeated block: already in place
            ++i;
            continue;
        }
        // Extend the run while the list already holds the following blocks in order.
        std::uint32_t last = first;
        ++i;
        while (i < blocks.size()) {
            const std::uint32_t next = entries_[last].next;
            if (next == none || next == placed || entries_[next].hash != blocks[i])
                break;
            last = next;
            ++i;
        }
        const bool in_place = placed == none ? first == head_ : entries_[placed].next == first;
        if (!in_place) {
            unlink_run(first, last);
            link_run_after(first, last, placed);
        }
        placed = last;
    }
}

bool block_lru::erase(common::block_hash h) {
    const std::size_t s = find(h);
    if (s == npos)
        return false;
    const std::uint32_t e = table_[s].entry;
    erase_slot(s);
    unlink_run(e, e);
    // The last entry moves into the hole, so entries stay dense.
    const auto last = static_cast<std::uint32_t>(entries_.size() - 1);
    if (e != last) {
        entries_[e] = entries_[last];
        table_[find(entries_[e].hash)].entry = e;
        const entry& moved = entries_[e];
        (moved.prev == none ? head_ : entries_[moved.prev].next) = e;
        (moved.next == none ? tail_ : entries_[moved.next].prev) = e;
    }
    entries_.pop_back();
    return true;
}

void block_lru::set_capacity(std::size_t capacity) {
    if (capacity >= entries_.size()) {
        capacity_ = capacity;
        return;
    }
    std::vector<common::block_hash> keep = recency_order();
    keep.resize(capacity);
    entries_.clear();
    table_.clear();
    if (capacity == 0) {
        entries_.shrink_to_fit();
        table_.shrink_to_fit();
    }
    head_ = tail_ = none;
    capacity_ = capacity;
    for (auto it = keep.rbegin(); it != keep.rend(); ++it) // oldest first: the order survives
        touch(*it);
}

std::vector<common::block_hash> block_lru::recency_order() const {
    std::vector<common::block_hash> out;
    out.reserve(entries_.size());
    for (std::uint32_t e = head_; e != none; e = entries_[e].next)
        out.push_back(entries_[e].hash);
    return out;
}

} // namespace lanes::router
