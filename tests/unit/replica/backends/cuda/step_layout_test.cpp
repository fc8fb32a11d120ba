// The CUDA backend's step metadata, laid out on the host: no device needed.
#include "replica/backends/cuda/step_layout.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace lanes;
using namespace lanes::replica;

namespace {

constexpr std::size_t block = 4;

struct entry_data {
    std::vector<common::token_id> tokens;
    std::vector<block_id> table;
};

std::vector<batch_entry> make(const std::vector<entry_data>& data,
                              const std::vector<std::size_t>& starts,
                              const std::vector<bool>& logits) {
    std::vector<batch_entry> out;
    for (std::size_t i = 0; i < data.size(); ++i)
        out.push_back({data[i].tokens, starts[i], data[i].table, logits[i]});
    return out;
}

} // namespace

TEST_CASE("a decode step is padded to its bucket, and padding stores nothing", "[cuda_layout]") {
    CHECK(bucket_index(1) == 0);
    CHECK(bucket_index(3) == 2);
    CHECK(bucket_index(256) == 8);
    const std::vector<entry_data> data = {{{7}, {2, 5}}, {{8}, {1}}, {{9}, {0, 3, 6}}};
    const auto batch = make(data, {5, 0, 9}, {true, true, true});
    const step_shape shape = shape_step(batch, block, 8, true);
    CHECK(shape.decode);
    CHECK(shape.bucket == 2);
    CHECK(shape.rows == 4);
    CHECK(shape.table_entries == 2 + 1 + 3);
    CHECK(shape.max_keys == 10);
    const std::size_t cap = 8;
    std::vector<std::int32_t> meta(meta_arrays * cap + shape.table_entries, -9);
    const packed_step p = pack_step(batch, shape, block, 2, cap, meta.data());
    const auto at = [&](std::size_t array, std::size_t i) { return meta[array * cap + i]; };
    CHECK(p.items == 4);      // one per entry, one for the padding row
    CHECK(p.copy_rows == 3);  // what the engine asked for
    CHECK(p.logit_rows == 4); // the LM head runs over the whole bucket
    CHECK(p.meta_ints == meta_arrays * cap + 6);
    // token, position and cache slot (block * block_size + offset) per row
    CHECK(std::vector{at(0, 0), at(0, 1), at(0, 2)} == std::vector<std::int32_t>{7, 8, 9});
    CHECK(std::vector{at(1, 0), at(1, 1), at(1, 2)} == std::vector<std::int32_t>{5, 0, 9});
    CHECK(at(2, 0) == 5 * 4 + 1); // position 5: second block (5), offset 1
    CHECK(at(2, 1) == 1 * 4 + 0);
    CHECK(at(2, 2) == 6 * 4 + 1);
    CHECK(at(2, 3) == -1);                             // padding: no slot
    CHECK(at(4, 3) == 0);                              // padding: an empty attention item
    CHECK(std::vector{at(5, 0), at(5, 1), at(5, 2)} == // each item's block table offset
          std::vector<std::int32_t>{0, 2, 3});
    CHECK(std::vector<std::int32_t>(meta.begin() + meta_arrays * cap, meta.end()) ==
          std::vector<std::int32_t>{2, 5, 1, 0, 3, 6});
}

TEST_CASE("a prefill step runs eagerly over its rows, items cut by queries per item",
          "[cuda_layout]") {
    const std::vector<entry_data> data = {{{1, 2, 3, 4, 5}, {3, 4}}, {{6}, {0}}};
    const auto batch = make(data, {2, 0}, {true, false});
    const step_shape shape = shape_step(batch, block, 8, true);
    CHECK_FALSE(shape.decode); // five tokens in one entry
    CHECK(shape.rows == 6);
    const std::size_t cap = 6;
    std::vector<std::int32_t> meta(meta_arrays * cap + shape.table_entries);
    const packed_step p = pack_step(batch, shape, block, 2, cap, meta.data());
    const auto at = [&](std::size_t array, std::size_t i) { return meta[array * cap + i]; };
    CHECK(p.items == 3 + 1); // rows 0-1, 2-3, 4 of the first entry; row 5 of the second
    CHECK(std::vector{at(3, 0), at(3, 1), at(3, 2), at(3, 3)} ==
          std::vector<std::int32_t>{0, 2, 4, 5});
    CHECK(std::vector{at(4, 0), at(4, 1), at(4, 2), at(4, 3)} ==
          std::vector<std::int32_t>{2, 2, 1, 1});
    CHECK(p.logit_rows == 1);
    CHECK(at(6, 0) == 4); // the first entry's last row
    CHECK(at(2, 0) == 3 * 4 + 2);
    CHECK(at(2, 2) == 4 * 4 + 0); // position 4 crosses into the second block
}

TEST_CASE("graphs off, or an entry that wants no logits, means no graph", "[cuda_layout]") {
    const std::vector<entry_data> data = {{{1}, {0}}};
    CHECK_FALSE(shape_step(make(data, {0}, {true}), block, 4, false).decode);
    CHECK_FALSE(shape_step(make(data, {0}, {false}), block, 4, true).decode);
}

TEST_CASE("block tables are checked against the sequence and the pool", "[cuda_layout]") {
    const std::vector<entry_data> short_table = {{{1, 2}, {0}}};
    CHECK_THROWS_AS(shape_step(make(short_table, {3}, {true}), block, 4, true),
                    std::invalid_argument); // positions 3-4 need two blocks
    const std::vector<entry_data> beyond = {{{1}, {4}}};
    CHECK_THROWS_AS(shape_step(make(beyond, {0}, {true}), block, 4, true), std::out_of_range);
    const std::vector<entry_data> negative = {{{1}, {-1}}};
    CHECK_THROWS_AS(shape_step(make(negative, {0}, {true}), block, 4, true), std::out_of_range);
}
