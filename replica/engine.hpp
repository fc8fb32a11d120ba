// The engine: owns all model state on its own thread and runs steps (admit -> schedule -> step ->
// publish). HTTP sessions submit requests with a request_stream and receive events through it.
#pragma once

#include "common/tokenizer.hpp"
#include "replica/config.hpp"
#include "replica/metrics.hpp"
#include "replica/request_stream.hpp"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace lanes::replica {

using engine_clock = std::chrono::steady_clock;

struct sampling_params {
    double temperature = 1.0;
    double top_p = 1.0;
    std::uint64_t seed = 0;
    std::int64_t max_tokens = 16;
    std::vector<std::string> stop;
    bool ignore_eos = false;
};

struct engine_request {
    std::string id;
    std::vector<common::token_id> prompt;
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

class engine {
public:
    engine(const replica_config& cfg, replica_metrics& metrics);
    ~engine();
    engine(const engine&) = delete;
    engine& operator=(const engine&) = delete;

    void start();
    void stop(); // finishes every request with "abort" and joins the thread

    submit_status submit(engine_request req, std::shared_ptr<request_stream> stream);
    load_snapshot load() const;
    std::size_t in_flight() const;

private:
    struct sequence;
    void run();
    void admit_incoming();
    void step();
    void finish(sequence& seq, const std::string& reason);
    void publish_gauges();

    const replica_config& cfg_;
    replica_metrics& metrics_;

    mutable std::mutex mutex_; // guards incoming_, stopping_, snapshot_
    std::condition_variable wake_;
    std::deque<std::unique_ptr<sequence>> incoming_;
    bool stopping_ = false;
    load_snapshot snapshot_;

    // Engine thread only.
    std::deque<std::unique_ptr<sequence>> waiting_;
    std::vector<std::unique_ptr<sequence>> running_;
    std::thread thread_;
};

} // namespace lanes::replica
