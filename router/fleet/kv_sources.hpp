// Where the subscriber reads a replica's KV events from besides its live PUB socket: the replay
// socket (vLLM's protocol: ask for "everything from sequence N", get the kept batches and an end
// marker) and a lanes replica's block dump over HTTP (every cached block and the sequence number
// the stream goes on from). Wire work only; what the batches mean is the subscriber's.
#pragma once

#include "common/http/url.hpp"
#include "common/kv_events/events.hpp"

#include <zmq.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lanes::router {

// The frames of one message: up to `max` kept, the rest read and dropped; none when no message
// is waiting.
std::vector<zmq::message_t> recv_frames(zmq::socket_t& s, std::size_t max);

// Batches (sequence, payload) from `from` on, in order, from a replay socket (a connected
// DEALER), up to its end marker (none when it has nothing from there on); nullopt when it does
// not answer within `timeout`, or `stopping` turns true.
using replayed_batches = std::vector<std::pair<std::int64_t, std::string>>;
std::optional<replayed_batches> request_replay(zmq::socket_t& dealer, std::int64_t from,
                                               std::chrono::milliseconds timeout,
                                               const std::atomic<bool>& stopping);

struct block_dump_settings {
    std::string token; // the replicas' --kv-dump-token
    std::chrono::milliseconds timeout{2'000};
    std::size_t max_bytes = 64u << 20;
};
struct block_dump {
    common::kv_events::batch blocks; // BlockStored events, parents first
    std::int64_t next_seq = 0;       // the stream goes on from this batch
};
// How a dump read ended; the label of lanes_router_kv_bootstraps_total.
enum class dump_outcome {
    ok,
    failed,     // transport: no connection, a timeout
    refused,    // an answer other than 200
    undecodable // 200, but no next-sequence header or a body that does not decode
};
std::string_view to_string(dump_outcome o);

struct block_dump_result {
    std::optional<block_dump> dump;
    dump_outcome outcome = dump_outcome::ok;
    std::string why;
};
// GET /kv-events/blocks of `replica` (blocking the calling thread, at most `s.timeout`).
block_dump_result read_block_dump(const common::http::url& replica, const block_dump_settings& s);

} // namespace lanes::router
