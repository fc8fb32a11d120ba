// A request's routing key: its prompt cut into blocks and hashed in the fleet's units (a lanes
// replica's byte tokens, or an engine's tokens, for text `bytes_per_token` bytes each), chained
// from a root that folds in the model and what the engine renders before the prompt (tools), so
// that two models, or two tool sets, never share index entries. Token-id prompts are hashed as
// the ids they are (with the BOS a lanes replica adds, in lanes units).
#pragma once

#include "common/prompt/block_hash.hpp"
#include "router/fleet/replica_pool.hpp"
#include "router/request/request_view.hpp"

#include <cstddef>
#include <string_view>
#include <vector>

namespace lanes::router {

struct routing_key {
    std::vector<common::block_hash> blocks;
    std::size_t prompt_tokens = 0; // in the fleet's tokens (an estimate for engines' text)
    std::size_t block_tokens = common::default_block_size; // tokens per block
};

// Block 0's parent for `model` and what is rendered before the prompt (`context_hash`, 0 for
// nothing): the root of the router's own block hashes, for requests and for engines' events.
common::block_hash affinity_root(std::string_view model, std::uint64_t context_hash);

// The root, in the router's hashes, of a run of `r`'s KV events with no parent: its LoRA
// adapter's name when the run names one, else the replica's model (when it serves exactly one),
// with the run's cache_salt_hash folded in as a request's salt is (0: none). What the KV-event
// subscriber hands the precise index, so that events and requests hash alike.
common::block_hash kv_event_root(const replica& r, const std::string& lora,
                                 std::uint64_t salt_hash);

routing_key make_routing_key(request_view& view, std::string_view model, const hash_units& units,
                             std::size_t bytes_per_token);

} // namespace lanes::router
