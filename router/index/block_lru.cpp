#include "router/index/block_lru.hpp"

#include <algorithm>
#include <optional>

namespace lanes::router {

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

std::uint32_t block_lru::take_entry(common::block_hash h) {
    std::uint32_t e;
    if (entries_.size() >= capacity_) { // full: the least recently used entry takes `h`
        e = tail_;
        table_.erase(entries_[e].hash);
        unlink_run(e, e);
    } else {
        e = static_cast<std::uint32_t>(entries_.size());
        entries_.push_back({});
    }
    entries_[e].hash = h;
    table_.try_emplace(h, e);
    return e;
}

void block_lru::touch(common::block_hash h) {
    if (capacity_ == 0)
        return;
    if (const std::uint32_t* found = table_.find(h)) {
        const std::uint32_t e = *found;
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
        const std::uint32_t* found = table_.find(blocks[i]);
        if (!found) {
            const std::uint32_t e = take_entry(blocks[i]);
            link_run_after(e, e, placed);
            placed = e;
            ++i;
            continue;
        }
        const std::uint32_t first = *found;
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
    const std::optional<std::uint32_t> found = table_.extract(h);
    if (!found)
        return false;
    const std::uint32_t e = *found;
    unlink_run(e, e);
    // The last entry moves into the hole, so entries stay dense.
    const auto last = static_cast<std::uint32_t>(entries_.size() - 1);
    if (e != last) {
        entries_[e] = entries_[last];
        *table_.find(entries_[e].hash) = e;
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
    if (capacity == 0)
        entries_.shrink_to_fit();
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
