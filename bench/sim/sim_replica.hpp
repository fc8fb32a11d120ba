// One replica of the offline simulator (lanes-bench simulate): the replica's own scheduler, block
// manager and prefix cache, stepped on a virtual clock by the sim backend's cost model instead of
// a thread that sleeps. It follows the engine's loop (replica/engine/engine.cpp): requests that
// arrive during a step wait for the next one; a step admits, schedules, "runs" for the modelled
// time and then emits one token per sequence whose chunk ended its known tokens.
#pragma once

#include "common/prompt/tokenizer.hpp"
#include "replica/backends/sim_cost_model.hpp"
#include "replica/engine/block_manager.hpp"
#include "replica/engine/scheduler.hpp"
#include "replica/engine/sequence.hpp"

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <unordered_map>
#include <vector>

namespace lanes::bench::sim {

struct replica_model {
    std::size_t num_blocks = 4096;
    std::size_t block_size = 16;
    std::size_t max_num_seqs = 64;
    std::size_t max_num_batched_tokens = 2048;
    std::size_t max_model_len = 8192;
    replica::sim_cost_model cost;
};

// What a step did to a request, for the simulator's books.
struct token_event {
    std::uint64_t request = 0;
    bool first = false;    // its first output token
    bool finished = false; // its last
    std::size_t cached_tokens = 0;
};

// The replica's load as /load and /metrics report it (engine::publish_gauges).
struct replica_load {
    double kv_usage = 0;
    std::int64_t running = 0;
    std::int64_t waiting = 0; // the scheduler's queue and requests not yet admitted
};

class sim_replica {
public:
    explicit sim_replica(const replica_model& model);
    sim_replica(const sim_replica&) = delete; // its scheduler refers to its block manager
    sim_replica& operator=(const sim_replica&) = delete;

    // A request arrives at `now` (tokens: BOS + prompt bytes); it joins the scheduler at the next
    // step.
    void submit(std::uint64_t request, std::vector<common::token_id> prompt, std::size_t max_tokens,
                double now = 0);
    // When idle with work queued: plans a step starting at `now` and returns its end; nullopt
    // when there is nothing to run.
    std::optional<double> start_step(double now);
    // Ends the step that start_step planned: tokens emitted, finished requests removed.
    void finish_step(std::vector<token_event>& out);
    bool stepping() const { return stepping_; }
    // From now on the prefix cache records its KV events (vLLM's BlockStored / BlockRemoved, as
    // the replica's engine publishes them); take_events() hands over what was recorded since.
    void record_events() { blocks_.record_events(model_.block_size); }
    std::vector<common::kv_events::event> take_events() { return blocks_.take_events(); }

    replica_load load() const;
    // How many of these block hashes (a prompt's, in order) the prefix cache holds now: what
    // admission would find if the request arrived this instant.
    std::size_t cached_blocks(std::span<const common::block_hash> hashes) const {
        return blocks_.count_cached(hashes);
    }
    // What its /metrics would say of prefills: seconds from first scheduling to first token,
    // summed, their count, and prompt tokens counted at the first token (as the engine does).
    double prefill_seconds() const { return prefill_seconds_; }
    double prefills() const { return prefills_; }
    double prompt_tokens() const { return prompt_tokens_; }
    double finished() const { return finished_; }
    // vllm:request_queue_time_seconds' sum and count: arrival to first scheduling.
    double queue_seconds() const { return queue_seconds_; }
    double queued() const { return queued_; }
    double prefix_hits() const { return hits_; }
    double prefix_queries() const { return queries_; }
    std::int64_t preemptions() const { return preemptions_; }
    std::int64_t steps() const { return steps_; }
    std::size_t num_blocks() const { return model_.num_blocks; }

private:
    struct seq : replica::sequence {
        std::uint64_t request = 0;
        std::size_t max_tokens = 0;
        double arrived = 0;    // virtual seconds
        double scheduled = -1; // first admitted
    };
    std::size_t max_sequence_tokens() const;

    replica_model model_;
    replica::block_manager blocks_;
    replica::scheduler scheduler_;
    std::deque<std::unique_ptr<seq>> incoming_;
    std::unordered_map<std::uint64_t, std::unique_ptr<seq>> live_;
    std::uint64_t next_id_ = 1;
    bool stepping_ = false;
    replica::schedule_output plan_;
    double hits_ = 0, queries_ = 0;
    double step_start_ = 0, step_end_ = 0;
    double prefill_seconds_ = 0, prefills_ = 0, prompt_tokens_ = 0, finished_ = 0;
    double queue_seconds_ = 0, queued_ = 0;
    std::int64_t preemptions_ = 0, steps_ = 0;
};

} // namespace lanes::bench::sim
