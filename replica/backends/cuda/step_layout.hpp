// How the CUDA backend lays one engine step out for the device: a decode step (every entry one
// token that wants logits, at most max_graph_batch entries, graphs on) is padded to a power-of-two
// bucket whose graph it replays; any other step runs eagerly over exactly its token rows. The
// host fills one int32 buffer, copied to the device in one piece: meta_arrays arrays of `cap`
// entries (token, position, cache slot, attention item first row, item row count, item's block
// table offset, logit row), then the block tables. Padding rows store nothing (slot -1) and their
// attention items are empty, so they touch no sequence's state. Host code only: tested on CPUs.
#pragma once

#include "replica/backends/backend.hpp"

#include <cstddef>
#include <cstdint>
#include <span>

namespace lanes::replica {

inline constexpr std::size_t meta_arrays = 7;
// Decode steps of up to this many sequences replay the graph of the next power of two
// (1, 2, 4, ..., 256); larger ones run eagerly.
inline constexpr std::size_t max_graph_batch = 256;
inline constexpr std::size_t graph_buckets = 9; // log2(max_graph_batch) + 1

// The smallest i with 2^i >= n.
std::size_t bucket_index(std::size_t n);

struct step_shape {
    bool decode = false;           // replayed from the bucket's graph
    std::size_t bucket = 0;        // graph bucket index when decode
    std::size_t rows = 0;          // token rows computed (a decode bucket includes its padding)
    std::size_t table_entries = 0; // block-table entries of the whole batch
    std::size_t max_keys = 0;      // the longest sequence's length after the step
};

// The step's shape; throws when an entry's block table is shorter than its sequence or names a
// block beyond the pool.
step_shape shape_step(std::span<const batch_entry> batch, std::size_t block_size,
                      std::size_t num_blocks, bool use_graphs);

struct packed_step {
    std::size_t items = 0;      // attention items (each up to queries_per_item query rows)
    std::size_t logit_rows = 0; // rows through the LM head
    std::size_t copy_rows = 0;  // logits rows copied back (the entries that want them)
    std::size_t meta_ints = 0;  // int32s of `meta` to copy to the device
};

// Fills `meta` (room for meta_arrays * cap + shape.table_entries int32s; cap >= shape.rows).
packed_step pack_step(std::span<const batch_entry> batch, const step_shape& shape,
                      std::size_t block_size, std::size_t queries_per_item, std::size_t cap,
                      std::int32_t* meta);

} // namespace lanes::replica
