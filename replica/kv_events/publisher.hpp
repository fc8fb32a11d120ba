// Publishes the engine's KV-cache events as vLLM's ZmqEventPublisher does: a PUB socket sending
// each batch as (topic, 8-byte big-endian sequence number, msgpack payload), the last
// `buffer_steps` batches kept, and a ROUTER socket that answers a request for "everything from
// sequence N" with those batches and then the end marker (-1, empty). The engine thread only
// queues a batch (bounded: a full queue drops it and counts, and the subscriber sees the gap);
// a thread of the publisher's own encodes and sends. Sockets bind exactly the endpoints given.
#pragma once

#include "common/kv_events/events.hpp"

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace lanes::replica {

struct kv_events_config {
    std::string endpoint;        // PUB, bound: tcp://host:port ("tcp://127.0.0.1:*" picks a port)
    std::string replay_endpoint; // ROUTER, bound; "" for none
    std::string topic;
    std::size_t buffer_steps = 10'000; // batches kept for replay
    int hwm = 100'000;                 // the PUB socket's high-water mark
    std::size_t max_queue = 100'000;   // batches waiting to be sent
};

class kv_event_publisher {
public:
    // Binds both sockets (throws std::runtime_error naming the endpoint when it cannot).
    explicit kv_event_publisher(kv_events_config cfg);
    ~kv_event_publisher();
    kv_event_publisher(const kv_event_publisher&) = delete;
    kv_event_publisher& operator=(const kv_event_publisher&) = delete;

    // Queues a batch; false (and counted) when the queue is full.
    bool publish(common::kv_events::batch b);
    // The endpoints actually bound (a '*' port resolved).
    const std::string& endpoint() const { return bound_; }
    const std::string& replay_endpoint() const { return replay_bound_; }
    std::uint64_t dropped() const { return dropped_.load(); }
    std::uint64_t sent() const { return sent_.load(); }

private:
    void run();
    struct sockets;

    kv_events_config cfg_;
    std::unique_ptr<sockets> zmq_;
    std::string bound_, replay_bound_;
    std::mutex mutex_;
    std::condition_variable wake_;
    // Each batch with its sequence number, given when it is queued: a dropped batch spends its
    // number too, so that subscribers see the gap.
    std::deque<std::pair<std::int64_t, common::kv_events::batch>> queue_;
    std::int64_t next_seq_ = 0;
    bool stopping_ = false;
    std::atomic<std::uint64_t> dropped_{0}, sent_{0};
    std::thread thread_;
};

} // namespace lanes::replica
