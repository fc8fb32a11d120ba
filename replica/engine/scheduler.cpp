#include "replica/engine/scheduler.hpp"

#include <algorithm>

namespace lanes::replica {

scheduler::scheduler(block_manager& blocks, scheduler_config cfg)
    : blocks_(blocks)
    , cfg_(cfg) {}

std::size_t scheduler::blocks_for(std::size_t tokens) const {
    return (tokens + cfg_.block_size - 1) / cfg_.block_size;
}

void scheduler::add(sequence* seq) {
    waiting_.push_back(seq);
}

void scheduler::remove(sequence* seq) {
    std::erase(waiting_, seq);
    std::erase(running_, seq);
    blocks_.release(seq->blocks);
    seq->blocks.clear();
    seq->num_computed = 0;
    seq->num_registered = 0;
}

// Extends the block table to cover `total_tokens`; false when the pool is short.
bool scheduler::grow(sequence* seq, std::size_t total_tokens) {
    const std::size_t need = blocks_for(total_tokens);
    if (need <= seq->blocks.size())
        return true;
    auto fresh = blocks_.allocate(need - seq->blocks.size());
    if (!fresh)
        return false;
    seq->blocks.insert(seq->blocks.end(), fresh->begin(), fresh->end());
    return true;
}

void scheduler::preempt(sequence* seq) {
    std::erase(running_, seq);
    blocks_.release(seq->blocks);
    seq->blocks.clear();
    seq->num_computed = 0; // recompute: the prefix cache will give most of it back
    seq->num_registered = 0;
    waiting_.push_front(seq);
}

schedule_output scheduler::schedule() {
    schedule_output out;
    std::size_t budget = cfg_.max_num_batched_tokens;
    // 1. Running sequences, oldest first; the newest are preempted when blocks run out.
    for (std::size_t i = 0; i < running_.size() && budget > 0;) {
        sequence* seq = running_[i];
        const std::size_t n = std::min(seq->uncomputed(), budget);
        bool placed = true;
        while (!grow(seq, seq->num_computed + n)) {
            sequence* victim = running_.back();
            preempt(victim);
            out.preempted.push_back(victim);
            if (victim == seq) {
                placed = false;
                break;
            }
        }
        if (!placed)
            break; // everything after it was preempted already
        out.chunks.push_back({seq, n});
        budget -= n;
        ++i;
    }
    // 2. Admit waiting sequences in FCFS order while resources allow.
    while (!waiting_.empty() && budget > 0 && running_.size() < cfg_.max_num_seqs &&
           out.preempted.empty()) {
        if (!try_admit(waiting_.front(), budget, out))
            break;
        budget -= out.chunks.back().num_tokens;
    }
    return out;
}

bool scheduler::try_admit(sequence* seq, std::size_t budget, schedule_output& out) {
    common::extend_block_hashes(seq->hashes, seq->tokens, cfg_.block_size, seq->hash_root);
    // Cap the hit so at least one token is computed (its logits are needed).
    const std::size_t max_hit_blocks = (seq->tokens.size() - 1) / cfg_.block_size;
    const std::size_t hit_blocks = std::min(blocks_.count_cached(seq->hashes), max_hit_blocks);
    const std::size_t hit_tokens = hit_blocks * cfg_.block_size;
    const std::size_t n = std::min(seq->tokens.size() - hit_tokens, budget);
    // Free blocks needed: new ones, plus cached ones that are evictable now (reviving them takes
    // them off the free list).
    std::size_t revived = 0;
    for (std::size_t i = 0; i < hit_blocks; ++i)
        if (blocks_.ref_count(blocks_.lookup(seq->hashes[i])) == 0)
            ++revived;
    const std::size_t fresh = blocks_for(hit_tokens + n) - hit_blocks;
    if (fresh + revived > blocks_.num_free())
        return false;
    seq->blocks = blocks_.acquire_cached(seq->hashes, hit_blocks);
    const bool ok = grow(seq, hit_tokens + n);
    (void)ok; // checked above
    seq->num_computed = hit_tokens;
    seq->num_registered = hit_blocks;
    waiting_.pop_front();
    running_.push_back(seq);
    out.admitted.push_back({seq, seq->tokens.size(), hit_tokens, !seq->admitted_before});
    if (!seq->admitted_before)
        seq->cached_tokens = hit_tokens;
    seq->admitted_before = true;
    out.chunks.push_back({seq, n});
    return true;
}

void scheduler::on_computed(sequence* seq, std::size_t num_tokens) {
    seq->num_computed += num_tokens;
    common::extend_block_hashes(seq->hashes, seq->tokens, cfg_.block_size, seq->hash_root);
    const std::size_t full = std::min(seq->num_computed / cfg_.block_size, seq->hashes.size());
    for (; seq->num_registered < full; ++seq->num_registered) {
        const std::size_t i = seq->num_registered;
        const common::block_hash parent = i == 0 ? seq->hash_root : seq->hashes[i - 1];
        blocks_.cache_block(seq->blocks[i], seq->hashes[i], parent,
                            std::span<const common::token_id>(seq->tokens)
                                .subspan(i * cfg_.block_size, cfg_.block_size),
                            i == 0);
    }
}

} // namespace lanes::replica
