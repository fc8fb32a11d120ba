#include "replica/backends/cuda/step_layout.hpp"

#include <algorithm>
#include <stdexcept>

namespace lanes::replica {

std::size_t bucket_index(std::size_t n) {
    std::size_t i = 0;
    while ((std::size_t{1} << i) < n)
        ++i;
    return i;
}

step_shape shape_step(std::span<const batch_entry> batch, std::size_t block_size,
                      std::size_t num_blocks, bool use_graphs) {
    step_shape s;
    std::size_t total = 0;
    s.decode = use_graphs && !batch.empty() && batch.size() <= max_graph_batch;
    for (const auto& e : batch) {
        const std::size_t end = e.start_pos + e.tokens.size();
        s.max_keys = std::max(s.max_keys, end);
        const std::size_t blocks = (end + block_size - 1) / block_size;
        if (e.block_table.size() < blocks)
            throw std::invalid_argument("cuda backend: block table shorter than the sequence");
        for (std::size_t b = 0; b < blocks; ++b)
            if (e.block_table[b] < 0 || static_cast<std::size_t>(e.block_table[b]) >= num_blocks)
                throw std::out_of_range("cuda backend: block id beyond the KV pool");
        total += e.tokens.size();
        s.table_entries += blocks;
        s.decode = s.decode && e.tokens.size() == 1 && e.want_logits;
    }
    s.bucket = s.decode ? bucket_index(batch.size()) : 0;
    s.rows = s.decode ? std::size_t{1} << s.bucket : total;
    return s;
}

packed_step pack_step(std::span<const batch_entry> batch, const step_shape& shape,
                      std::size_t block_size, std::size_t queries_per_item, std::size_t cap,
                      std::int32_t* meta) {
    std::int32_t *tokens = meta, *pos = meta + cap, *slot = meta + 2 * cap;
    std::int32_t *item_first = meta + 3 * cap, *item_count = meta + 4 * cap;
    std::int32_t *item_table = meta + 5 * cap, *logit_row = meta + 6 * cap;
    std::int32_t* tables = meta + meta_arrays * cap;
    const std::size_t qpi = std::max<std::size_t>(queries_per_item, 1);
    std::size_t row = 0, table_used = 0;
    packed_step p;
    for (const auto& e : batch) {
        const std::size_t n = e.tokens.size();
        const std::size_t blocks = (e.start_pos + n + block_size - 1) / block_size;
        const auto offset = static_cast<std::int32_t>(table_used);
        for (std::size_t b = 0; b < blocks; ++b)
            tables[table_used++] = static_cast<std::int32_t>(e.block_table[b]);
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t at = e.start_pos + i;
            tokens[row + i] = static_cast<std::int32_t>(e.tokens[i]);
            pos[row + i] = static_cast<std::int32_t>(at);
            slot[row + i] = static_cast<std::int32_t>(
                static_cast<std::size_t>(e.block_table[at / block_size]) * block_size +
                at % block_size);
        }
        for (std::size_t i = 0; i < n; i += qpi, ++p.items) {
            item_first[p.items] = static_cast<std::int32_t>(row + i);
            item_count[p.items] = static_cast<std::int32_t>(std::min(qpi, n - i));
            item_table[p.items] = offset;
        }
        row += n;
        if (e.want_logits && n > 0)
            logit_row[p.logit_rows++] = static_cast<std::int32_t>(row - 1);
    }
    p.copy_rows = p.logit_rows;
    if (shape.decode) {
        // Pad to the bucket: no token stored, no attention; the LM head runs over every row.
        for (; row < shape.rows; ++row, ++p.items) {
            tokens[row] = 0;
            pos[row] = 0;
            slot[row] = -1;
            item_first[p.items] = 0;
            item_count[p.items] = 0;
            item_table[p.items] = 0;
        }
        for (std::size_t r = 0; r < shape.rows; ++r)
            logit_row[r] = static_cast<std::int32_t>(r);
        p.logit_rows = shape.rows;
    }
    p.meta_ints = meta_arrays * cap + table_used;
    return p;
}

} // namespace lanes::replica
