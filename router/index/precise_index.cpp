#include "router/index/precise_index.hpp"

#include <algorithm>
#include <mutex>
#include <vector>

namespace lanes::router {

namespace ev = common::kv_events;

void precise_index::clear(state& s) {
    s.by_engine.clear();
    s.held.clear();
    s.pending.clear();
}

void precise_index::release(state& s, common::block_hash h) {
    if (std::uint32_t* copies = s.held.find(h); copies && --*copies == 0)
        s.held.erase(h);
}

void precise_index::apply(const std::string& replica, const ev::batch& b, const root_fn& root_of,
                          std::size_t* unplaced) {
    // The roots first, outside the lock (root_of may read the replica's state).
    std::vector<common::block_hash> roots(b.events.size());
    for (std::size_t k = 0; k < b.events.size(); ++k)
        if (const auto* stored = std::get_if<ev::block_stored>(&b.events[k]);
            stored && !stored->parent)
            roots[k] = root_of(*stored);
    std::unique_lock lock(mutex_);
    state& s = replicas_[replica];
    for (std::size_t k = 0; k < b.events.size(); ++k) {
        const auto& e = b.events[k];
        if (const auto* stored = std::get_if<ev::block_stored>(&e)) {
            common::block_hash parent = roots[k];
            if (stored->parent) {
                const auto it = s.by_engine.find(*stored->parent);
                if (it == s.by_engine.end()) {
                    if (unplaced)
                        ++*unplaced;
                    continue; // a parent this index never saw: nothing to chain from
                }
                parent = it->second;
            }
            const std::span<const std::uint32_t> tokens(stored->token_ids);
            for (std::size_t i = 0; i < stored->block_hashes.size(); ++i) {
                parent = common::hash_block(
                    parent, tokens.subspan(i * stored->block_size, stored->block_size));
                const auto [at, added] = s.by_engine.emplace(stored->block_hashes[i], parent);
                if (!added) {
                    if (at->second == parent)
                        continue; // stored again: already counted
                    release(s, at->second);
                    at->second = parent;
                }
                ++*s.held.try_emplace(parent, 0).first;
                s.pending.erase(parent); // confirmed: no longer merely expected
            }
            if (s.by_engine.size() > settings_.max_blocks) {
                clear(s);
                s.live = false;
                return;
            }
        } else if (const auto* removed = std::get_if<ev::block_removed>(&e)) {
            for (const auto& eh : removed->block_hashes) {
                const auto it = s.by_engine.find(eh);
                if (it == s.by_engine.end())
                    continue;
                release(s, it->second);
                s.by_engine.erase(it);
            }
        } else { // AllBlocksCleared: from here on the stream says everything
            clear(s);
            s.live = true;
        }
    }
}

void precise_index::reset(const std::string& replica, bool live) {
    std::unique_lock lock(mutex_);
    state& s = replicas_[replica];
    clear(s);
    s.live = live;
}

void precise_index::set_live(const std::string& replica, bool live) {
    std::unique_lock lock(mutex_);
    replicas_[replica].live = live;
}

void precise_index::forget(const std::string& replica) {
    std::unique_lock lock(mutex_);
    replicas_.erase(replica);
}

bool precise_index::live(const std::string& replica) const {
    std::shared_lock lock(mutex_);
    const auto it = replicas_.find(replica);
    return it != replicas_.end() && it->second.live;
}

bool precise_index::live(const std::string& replica, std::uint64_t epoch) const {
    return reading(*this).live(replica, epoch);
}

void precise_index::confirm(const std::string& replica, std::uint64_t epoch) {
    std::unique_lock lock(mutex_);
    replicas_[replica].epoch = epoch;
}

std::size_t precise_index::match(const std::string& replica,
                                 std::span<const common::block_hash> blocks,
                                 clock::time_point now) const {
    return reading(*this).match(replica, blocks, now);
}

std::size_t precise_index::match_in(const state& s, std::span<const common::block_hash> blocks,
                                    clock::time_point now) {
    std::size_t n = 0;
    for (const auto h : blocks) {
        if (s.held.contains(h)) {
            ++n;
            continue;
        }
        const clock::time_point* until = s.pending.find(h);
        if (!until || *until < now)
            break;
        ++n;
    }
    return n;
}

void precise_index::expect(const std::string& replica, std::span<const common::block_hash> blocks,
                           clock::time_point now) {
    std::unique_lock lock(mutex_);
    const auto it = replicas_.find(replica);
    if (it == replicas_.end() || !it->second.live)
        return;
    state& s = it->second;
    const auto until = now + settings_.pending_ttl;
    for (const auto h : blocks)
        if (!s.held.contains(h))
            *s.pending.try_emplace(h).first = until;
    // Expired ones are swept out each time the table doubles: amortised constant per block.
    if (s.pending.size() >= s.pending_sweep_at) {
        s.pending.erase_if([now](common::block_hash, clock::time_point t) { return t < now; });
        s.pending_sweep_at = std::max<std::size_t>(4096, 2 * s.pending.size());
    }
}

std::size_t precise_index::size(const std::string& replica) const {
    return reading(*this).size(replica);
}

bool precise_index::reading::live(const std::string& replica, std::uint64_t epoch) const {
    const state* s = index_.find(replica);
    return s && s->live && s->epoch == epoch;
}

std::size_t precise_index::reading::match(const std::string& replica,
                                          std::span<const common::block_hash> blocks,
                                          clock::time_point now) const {
    const state* s = index_.find(replica);
    return s ? match_in(*s, blocks, now) : 0;
}

std::size_t precise_index::reading::size(const std::string& replica) const {
    const state* s = index_.find(replica);
    return s ? s->held.size() : 0;
}

} // namespace lanes::router
