// Continuous batching, as vLLM V1's scheduler (and nano-vllm's) does it, without touching a
// model. Every step:
//  1. running sequences (oldest first) get their next tokens: one decode token, or the next chunk
//     of a long prompt (chunked prefill) within the step's token budget; when KV blocks run out,
//     the newest running sequence is preempted (its blocks freed, it goes back to the head of the
//     waiting queue and is recomputed later, helped by the prefix cache);
//  2. waiting sequences are admitted in FCFS order while the token budget, max_num_seqs and free
//     blocks allow: the longest run of cached full blocks is reused (capped so at least one token
//     is computed) and only the rest is computed.
// Prefix-cache queries and hits are counted at a sequence's first admission, in tokens.
#pragma once

#include "replica/engine/block_manager.hpp"
#include "replica/engine/sequence.hpp"

#include <deque>
#include <vector>

namespace lanes::replica {

struct scheduler_config {
    std::size_t block_size = 16;
    std::size_t max_num_seqs = 64;
    std::size_t max_num_batched_tokens = 2048;
};

struct scheduled_chunk {
    sequence* seq = nullptr;
    std::size_t num_tokens = 0; // compute tokens [num_computed, num_computed + num_tokens)
};

struct admission {
    sequence* seq = nullptr;
    std::size_t query_tokens = 0;
    std::size_t hit_tokens = 0;
    bool first = false; // first admission (not a re-admission after preemption)
};

struct schedule_output {
    std::vector<scheduled_chunk> chunks;
    std::vector<admission> admitted;
    std::vector<sequence*> preempted;
};

class scheduler {
public:
    scheduler(block_manager& blocks, scheduler_config cfg);

    void add(sequence* seq); // joins the waiting queue's tail
    // Removes a sequence wherever it is and frees its blocks (abort or finish).
    void remove(sequence* seq);
    schedule_output schedule();
    // After the backend ran a chunk: advance num_computed and offer newly full blocks to the
    // prefix cache.
    void on_computed(sequence* seq, std::size_t num_tokens);

    std::size_t num_waiting() const { return waiting_.size(); }
    std::size_t num_running() const { return running_.size(); }
    bool idle() const { return waiting_.empty() && running_.empty(); }

private:
    std::size_t blocks_for(std::size_t tokens) const;
    bool grow(sequence* seq, std::size_t total_tokens);
    void preempt(sequence* seq);
    bool try_admit(sequence* seq, std::size_t budget, schedule_output& out);

    block_manager& blocks_;
    scheduler_config cfg_;
    std::deque<sequence*> waiting_;
    std::vector<sequence*> running_; // admission order: oldest first
};

} // namespace lanes::replica
