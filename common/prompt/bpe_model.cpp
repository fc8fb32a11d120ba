#include "common/prompt/bpe_model.hpp"

#include <algorithm>
#include <limits>
#include <queue>

#include <xxhash.h>

namespace lanes::common {

std::size_t string_hash::operator()(std::string_view s) const noexcept {
    return static_cast<std::size_t>(XXH3_64bits(s.data(), s.size()));
}

void merge_table::reserve(std::size_t n) {
    std::size_t capacity = 16;
    while (capacity < 2 * n) {
        capacity *= 2;
    }
    std::vector<entry> old = std::move(slots_);
    slots_.assign(capacity, entry{});
    mask_ = capacity - 1;
    size_ = 0;
    for (const entry& e : old) {
        if (e.key != empty_key) {
            insert_or_assign(static_cast<token_id>(e.key >> 32), static_cast<token_id>(e.key),
                             e.rank, e.merged);
        }
    }
}

void merge_table::insert_or_assign(token_id left, token_id right, std::uint32_t rank,
                                   token_id merged) {
    if (2 * (size_ + 1) > slots_.size()) {
        reserve(size_ + 1);
    }
    const std::uint64_t key = (std::uint64_t{left} << 32) | right;
    for (std::size_t i = slot(key);; i = (i + 1) & mask_) {
        entry& e = slots_[i];
        if (e.key == key || e.key == empty_key) {
            size_ += e.key == empty_key ? 1 : 0;
            e = {key, rank, merged};
            return;
        }
    }
}

namespace {

constexpr std::uint32_t no_rank = std::numeric_limits<std::uint32_t>::max();
// Words up to this many symbols merge by scanning; longer ones through a heap.
constexpr std::size_t short_word = 64;

} // namespace

void bpe_model::merge_short(std::vector<token_id>& symbols) const {
    // rank and result of the pair starting at each symbol
    struct pair_info {
        std::uint32_t rank = no_rank;
        token_id merged = 0;
    };
    std::vector<pair_info> pairs(symbols.size());
    auto look = [&](std::size_t i) {
        pair_info info;
        if (i + 1 < symbols.size()) {
            if (const auto* e = merges.find(symbols[i], symbols[i + 1])) {
                info = {e->rank, e->merged};
            }
        }
        pairs[i] = info;
    };
    for (std::size_t i = 0; i < symbols.size(); ++i) {
        look(i);
    }
    while (symbols.size() > 1) {
        std::size_t best = 0;
        for (std::size_t i = 1; i + 1 < symbols.size(); ++i) {
            if (pairs[i].rank < pairs[best].rank) {
                best = i;
            }
        }
        if (pairs[best].rank == no_rank) {
            break;
        }
        symbols[best] = pairs[best].merged;
        symbols.erase(symbols.begin() + static_cast<std::ptrdiff_t>(best) + 1);
        pairs.erase(pairs.begin() + static_cast<std::ptrdiff_t>(best) + 1);
        look(best);
        if (best > 0) {
            look(best - 1);
        }
    }
}

void bpe_model::merge_long(std::vector<token_id>& symbols) const {
    const std::size_t n = symbols.size();
    std::vector<std::uint32_t> next(n);
    std::vector<std::uint32_t> prev(n);
    std::vector<bool> alive(n, true);
    constexpr std::uint32_t none = std::numeric_limits<std::uint32_t>::max();
    for (std::size_t i = 0; i < n; ++i) {
        next[i] = i + 1 < n ? static_cast<std::uint32_t>(i + 1) : none;
        prev[i] = i > 0 ? static_cast<std::uint32_t>(i - 1) : none;
    }
    struct candidate {
        std::uint32_t rank;
        std::uint32_t pos;
        token_id merged;
        bool operator>(const candidate& o) const {
            return rank != o.rank ? rank > o.rank : pos > o.pos;
        }
    };
    std::priority_queue<candidate, std::vector<candidate>, std::greater<>> heap;
    auto offer = [&](std::uint32_t pos) {
        if (pos == none || next[pos] == none) {
            return;
        }
        if (const auto* e = merges.find(symbols[pos], symbols[next[pos]])) {
            heap.push({e->rank, pos, e->merged});
        }
    };
    for (std::size_t i = 0; i + 1 < n; ++i) {
        offer(static_cast<std::uint32_t>(i));
    }
    while (!heap.empty()) {
        const candidate c = heap.top();
        heap.pop();
        if (!alive[c.pos] || next[c.pos] == none) {
            continue;
        }
        const auto* e = merges.find(symbols[c.pos], symbols[next[c.pos]]);
        if (e == nullptr || e->rank != c.rank || e->merged != c.merged) {
            continue; // the pair changed since this candidate was offered
        }
        const std::uint32_t gone = next[c.pos];
        symbols[c.pos] = c.merged;
        alive[gone] = false;
        next[c.pos] = next[gone];
        if (next[gone] != none) {
            prev[next[gone]] = c.pos;
        }
        offer(prev[c.pos]);
        offer(c.pos);
    }
    std::size_t kept = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (alive[i]) {
            symbols[kept++] = symbols[i];
        }
    }
    symbols.resize(kept);
}

void bpe_model::encode_word(std::string_view bytes, std::vector<token_id>& out) const {
    if (bytes.empty()) {
        return;
    }
    const bool cacheable = bytes.size() <= cache_max_word;
    if (cacheable) {
        std::lock_guard lock(cache_mutex_);
        if (auto it = cache_.find(bytes); it != cache_.end()) {
            out.insert(out.end(), it->second.begin(), it->second.end());
            return;
        }
    }
    std::vector<token_id> symbols;
    if (ignore_merges) {
        if (auto it = vocab_by_bytes.find(bytes); it != vocab_by_bytes.end()) {
            symbols.push_back(it->second);
        }
    }
    if (symbols.empty()) {
        symbols.reserve(bytes.size());
        for (char c : bytes) {
            if (const auto& id = byte_ids[static_cast<std::uint8_t>(c)]) {
                symbols.push_back(*id);
            } else if (unk) {
                symbols.push_back(*unk);
            }
        }
        if (symbols.size() <= short_word) {
            merge_short(symbols);
        } else {
            merge_long(symbols);
        }
    }
    out.insert(out.end(), symbols.begin(), symbols.end());
    if (cacheable) {
        std::lock_guard lock(cache_mutex_);
        if (cache_.size() < cache_capacity) {
            cache_.emplace(std::string(bytes), std::move(symbols));
        }
    }
}

std::optional<token_id> bpe_model::find(std::string_view bytes) const {
    if (auto it = vocab_by_bytes.find(bytes); it != vocab_by_bytes.end()) {
        return it->second;
    }
    return std::nullopt;
}

} // namespace lanes::common
