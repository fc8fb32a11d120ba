// The sim backend: no logits, and each step takes the cost model's time for its batch (checked from
// below, with a generous ceiling: a sleep can overrun, never underrun).
#include "replica/backends/sim_backend.hpp"

#include <catch2/catch.hpp>

#include <chrono>

using namespace lanes;
using namespace lanes::replica;
using namespace std::chrono_literals;

namespace {

using ms = std::chrono::duration<double, std::milli>;

// How long one forward over `batch` takes, and that it gave no logits.
ms timed_forward(backend& b, const std::vector<batch_entry>& batch) {
    std::vector<std::vector<float>> logits;
    const auto start = std::chrono::steady_clock::now();
    const bool computed = b.forward(batch, logits);
    const ms took = std::chrono::steady_clock::now() - start;
    CHECK_FALSE(computed);
    CHECK(logits.empty());
    return took;
}

// Only prefill costs (40 ms a step with any), decodes the 1 ms floor.
sim_cost_model prefill_costly() {
    sim_cost_model m;
    m.prefill_a = m.prefill_b = 0;
    m.prefill_c = 40;
    m.decode_d = m.decode_e = m.decode_f = 0;
    return m;
}

// Decodes cost 80·p ms for KV fraction p, prefill nothing.
sim_cost_model decode_costly() {
    sim_cost_model m;
    m.prefill_a = m.prefill_b = m.prefill_c = 0;
    m.decode_d = m.decode_f = 0;
    m.decode_e = 80;
    return m;
}

const std::vector<common::token_id> one = {65};
const std::vector<common::token_id> hundred(100, 65);
const std::vector<block_id> table = {0, 1, 2, 3, 4, 5, 6, 7};

} // namespace

TEST_CASE("sim backend: a mixed step sleeps the model's prefill plus decode time", "[sim]") {
    sim_cost_model m; // the default constants, twice as fast
    m.speedup = 2.0;
    sim_backend b(m, 1000);
    CHECK(b.name() == "sim");
    // 100 prompt tokens and one decode at position 399: 500 of 1000 KV tokens active.
    const std::vector<batch_entry> batch = {{hundred, 0, table, false}, {one, 399, table, true}};
    const ms expected = m.step_time(100, 1, 0.5);
    CHECK(expected.count() == Approx((18.0239740 + 26.31) / 2));
    const ms took = timed_forward(b, batch);
    CHECK(took >= expected);
    CHECK(took < expected + 1s);
}

TEST_CASE("sim backend: one token at position 0, or without logits, is prefill", "[sim]") {
    sim_backend b(prefill_costly(), 1000);
    // A prompt of one token, and the last piece of a chunk that asks for no logits.
    const ms first = timed_forward(b, {{one, 0, table, true}});
    CHECK(first >= 40ms);
    CHECK(first < 1040ms);
    const ms chunk_end = timed_forward(b, {{one, 50, table, false}});
    CHECK(chunk_end >= 40ms);
    // A real decode costs only the floor of 1 ms here.
    const ms decode = timed_forward(b, {{one, 50, table, true}});
    CHECK(decode >= 1ms);
    CHECK(decode < 1001ms);
}

TEST_CASE("sim backend: decode time follows the KV fraction of the batch", "[sim]") {
    sim_backend b(decode_costly(), 100);
    // Two decodes at positions 29 and 19: 30 + 20 = 50 of 100 tokens, 80 * 0.5 = 40 ms.
    const ms half = timed_forward(b, {{one, 29, table, true}, {one, 19, table, true}});
    CHECK(half >= 40ms);
    CHECK(half < 1040ms);
    // More active tokens than the capacity: the fraction stops at 1, 80 ms.
    const ms full = timed_forward(b, {{one, 499, table, true}});
    CHECK(full >= 80ms);
    CHECK(full < 1080ms);
    // A capacity of 0 is taken as 1 token: any decode is at the full fraction.
    sim_backend empty(decode_costly(), 0);
    CHECK(timed_forward(empty, {{one, 1, table, true}}) >= 80ms);
}
