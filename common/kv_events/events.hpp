// KV-cache events in vLLM's wire format (vllm/distributed/kv_events.py): a batch per engine step,
// msgpack-encoded, published on ZeroMQ as three frames (topic, an 8-byte big-endian sequence
// number, the payload). lanes writes the array form vLLM's msgspec structs had with array_like:
//   batch        [ts, [event...], data_parallel_rank]
//   BlockStored  ["BlockStored", [hash...], parent hash or nil, [token id...], block_size,
//                 lora_id or nil, medium or nil(, lora_name or nil, cache_salt_hash)]
//   BlockRemoved ["BlockRemoved", [hash...], medium or nil]
//   AllBlocksCleared ["AllBlocksCleared"]
// and reads that form and the map form of newer vLLM ({"ts":..., "events": [{"type":
// "BlockStored", "block_hashes": ...}]}), with later fields (lora_name, extra_keys, group_idx,
// ...) allowed and ignored. A block hash is an integer (lanes, and vLLM with
// VLLM_KV_EVENTS_USE_INT_BLOCK_HASHES) or bytes (vLLM's default); either is kept as opaque bytes,
// since the router never relies on the engine's hash function. cache_salt_hash is lanes' own:
// a run whose block 0 is under a request's cache_salt has no parent and carries the salt's hash
// (common::salted_root), never the salt; other readers ignore the trailing field.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace lanes::common::kv_events {

// An engine's block hash as it came: 8 big-endian bytes for an integer, else the bytes.
using engine_hash = std::string;
engine_hash int_hash(std::uint64_t h);

struct block_stored {
    std::vector<engine_hash> block_hashes;
    std::optional<engine_hash> parent;
    std::vector<std::uint32_t> token_ids; // block_size of them per block, in order
    std::size_t block_size = 0;
    std::optional<std::int64_t> lora_id;
    std::optional<std::string> medium;
    std::optional<std::string> lora_name;
    std::optional<std::uint64_t> cache_salt_hash;
};
struct block_removed {
    std::vector<engine_hash> block_hashes;
    std::optional<std::string> medium;
};
struct all_blocks_cleared {};
using event = std::variant<block_stored, block_removed, all_blocks_cleared>;

struct batch {
    double ts = 0;
    std::vector<event> events;
    std::optional<std::int64_t> data_parallel_rank;
};

// The msgpack payload of `b` in the array form. Integer hashes (8 bytes) are written as
// integers, any other as bytes.
std::string encode(const batch& b);

struct decode_limits {
    std::size_t max_bytes = 64u << 20; // a payload larger than this is refused
    std::size_t max_events = 1u << 20; // per batch
    std::size_t max_hash_bytes = 64;   // one block hash
};
// Reads a payload; false with `error` on anything that is not a batch of known events.
bool decode(std::string_view payload, batch& out, std::string& error,
            const decode_limits& lim = {});

// A lanes replica's block dump: GET dump_path (behind its --kv-dump-token) answers one batch of
// BlockStored events, and dump_next_seq_header the sequence number the stream goes on from.
inline constexpr std::string_view dump_path = "/kv-events/blocks";
inline constexpr std::string_view dump_next_seq_header = "lanes-kv-events-next-seq";

// The sequence-number frame: 8 bytes big-endian, signed (-1 ends a replay).
std::string sequence_frame(std::int64_t seq);
std::optional<std::int64_t> read_sequence(std::string_view frame);

} // namespace lanes::common::kv_events
