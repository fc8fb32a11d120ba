// The engine: owns all model state on its own thread and runs steps (admit -> schedule -> step ->
// publish). HTTP sessions submit requests with a request_stream and receive events through it.
#pragma once

#include "common/prompt/tokenizer.hpp"
#include "replica/backends/backend.hpp"
#include "replica/config.hpp"
#include "replica/engine/block_manager.hpp"
#include "replica/engine/request_stream.hpp"
#include "replica/engine/scheduler.hpp"
#include "replica/engine/vocabulary.hpp"
#include "replica/metrics.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

namespace lanes::replica {

using engine_clock = std::chrono::steady_clock;
using engine_clock_fn = std::function<engine_clock::time_point()>;

// One request's sampling, resolved (the request's fields over the model's defaults).
struct sampling_params {
    double temperature = 1.0;
    double top_p = 1.0;
    std::int64_t top_k = 0; // 0: off
    double min_p = 0.0;
    double repetition_penalty = 1.0;
    double presence_penalty = 0.0;
    double frequency_penalty = 0.0;
    std::uint64_t seed = 0;
    std::int64_t max_tokens = 16;
    // Before this many output tokens EOS and stop_token_ids can be neither drawn nor end it.
    std::int64_t min_tokens = 0;
    std::vector<std::string> stop;
    // End the output (vLLM's stop_reason is the id); their text is left out.
    std::vector<common::token_id> stop_token_ids;
    bool ignore_eos = false;
    // Alternatives per token whose raw log-probabilities go with each event; nullopt: none.
    std::optional<std::size_t> logprobs;
};

struct engine_request {
    std::string id;
    std::vector<common::token_id> prompt;
    // Keeps its blocks apart in the prefix cache from requests of another salt (vLLM's
    // cache_salt, common::salted_root).
    common::block_hash hash_root = common::root_block_hash;
    sampling_params sampling;
    engine_clock::time_point arrival = engine_clock::now();
};

// What /load reports and the router reads.
struct load_snapshot {
    double kv_usage = 0.0;
    std::int64_t running = 0;
    std::int64_t waiting = 0;
    std::int64_t prefix_cache_hits = 0;
    std::int64_t prefix_cache_queries = 0;
    std::int64_t num_blocks = 0;
    std::int64_t block_size = 0;
};

enum class submit_status { accepted, queue_full, stopped };

// Every block the KV cache holds, taken between two steps (block_manager::dump), and where it
// stands in the event stream: the cache after the engine's batches 0 .. next_batch - 1.
struct kv_dump {
    std::vector<common::kv_events::event> events;
    std::int64_t next_batch = 0;
};

class engine {
public:
    // Runs `b` over a KV pool of cfg.kv_blocks blocks; `clock` times every request (queue time,
    // TTFT, inter-token and end-to-end latency).
    engine(
        const replica_config& cfg, replica_metrics& metrics, std::unique_ptr<backend> b,
        engine_clock_fn clock = [] { return engine_clock::now(); });
    ~engine();
    engine(const engine&) = delete;
    engine& operator=(const engine&) = delete;

    // Before start(): every step's KV-cache events (blocks stored, blocks evicted) go to `sink`
    // as one batch, on the engine thread. The stream opens with AllBlocksCleared (the cache this
    // process starts with is empty): alone, at start(), when `clear_at_start` (a replay socket
    // keeps that batch for subscribers that come later), else as the first event of the first
    // step's batch, so that a subscriber that joined before the first request sees batch 0 (a
    // PUB socket drops what it sends before anyone subscribes). `sink` must not block.
    void publish_kv_events(std::function<void(common::kv_events::batch)> sink, bool clear_at_start);
    // Before start(): the vocabulary requests' ids are in (the byte vocabulary by default).
    void use_vocabulary(vocabulary v) { vocab_ = std::move(v); }
    const vocabulary& vocab() const { return vocab_; }
    void start();
    void stop(); // finishes every request with "abort" and joins the thread

    submit_status submit(engine_request req, std::shared_ptr<request_stream> stream);
    // Asks for a kv_dump at the engine thread's next pause between steps; `done` runs there
    // and must not block. False (and `done` never runs) when stopped or no events are published.
    bool request_kv_dump(std::function<void(kv_dump)> done);
    load_snapshot load() const;
    std::string_view backend_name() const { return backend_->name(); }
    engine_clock::time_point now() const { return clock_(); }
    std::size_t num_blocks() const { return num_blocks_; }
    // Longest prompt + output the KV pool can hold for one request.
    std::size_t max_sequence_tokens() const;

private:
    struct live;
    void run();
    void admit_incoming();
    void drop_cancelled();
    void step();
    void emit_token(live& seq, common::token_id tok, engine_clock::time_point now);
    common::openai::token_logprob logprobs_of(std::span<const float> logits, common::token_id tok,
                                              std::size_t top) const;
    void finish(live& seq, finish_reason reason,
                std::optional<common::token_id> stop_token = std::nullopt);
    void publish_gauges();
    void serve_kv_dumps();

    const replica_config& cfg_;
    replica_metrics& metrics_;
    std::unique_ptr<backend> backend_;
    engine_clock_fn clock_;
    std::size_t num_blocks_;

    mutable std::mutex mutex_; // guards incoming_, stopping_, snapshot_
    std::condition_variable wake_;
    std::deque<std::unique_ptr<live>> incoming_;
    bool stopping_ = false;
    load_snapshot snapshot_;
    std::vector<std::function<void(kv_dump)>> dump_waiters_;

    std::function<void(common::kv_events::batch)> kv_sink_;
    std::int64_t kv_batches_ = 0; // given to kv_sink_ so far
    bool kv_clear_at_start_ = false;
    vocabulary vocab_;
    // Engine thread only.
    block_manager blocks_;
    scheduler scheduler_;
    std::unordered_map<std::uint64_t, std::unique_ptr<live>> live_;
    std::uint64_t next_id_ = 1;
    std::vector<std::vector<float>> logits_;
    std::thread thread_;
};

} // namespace lanes::replica
