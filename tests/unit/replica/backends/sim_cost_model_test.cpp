// The sim backend's cost model: prefill a·T² + b·T + c, decode d·p² + e·p + f (floored at 1 ms),
// both when a step has both, all divided by the speedup.
#include "replica/backends/sim_cost_model.hpp"

#include <catch2/catch.hpp>

using namespace lanes::replica;

namespace {

double ms(const sim_cost_model& m, std::size_t prefill, std::size_t decodes, double fraction) {
    return m.step_time(prefill, decodes, fraction).count();
}

} // namespace

TEST_CASE("sim cost: prefill only is a·T² + b·T + c of the uncached tokens", "[sim_cost_model]") {
    const sim_cost_model m; // Dynamo's mocker constants
    // 4.209989e-7 * 1e6 + 1.518344e-2 * 1000 + 16.50142
    CHECK(ms(m, 1000, 0, 0.0) == Approx(32.1058589));
    CHECK(ms(m, 1, 0, 0.0) == Approx(16.5166039));
    CHECK(ms(m, 2048, 0, 0.0) == Approx(49.3629025));
    // The KV fraction only matters to decodes.
    CHECK(ms(m, 1000, 0, 0.9) == Approx(32.1058589));
    CHECK(ms(m, 0, 0, 0.5) == 0.0); // an empty step costs nothing
}

TEST_CASE("sim cost: decode only is d·p² + e·p + f of the KV fraction, whatever the batch",
          "[sim_cost_model]") {
    const sim_cost_model m;
    CHECK(ms(m, 0, 1, 0.0) == Approx(5.74));
    // -25.74 * 0.25 + 54.01 * 0.5 + 5.74
    CHECK(ms(m, 0, 1, 0.5) == Approx(26.31));
    CHECK(ms(m, 0, 1, 1.0) == Approx(34.01));
    CHECK(ms(m, 0, 64, 0.5) == Approx(26.31)); // per step, not per sequence
}

TEST_CASE("sim cost: a step with both pays both", "[sim_cost_model]") {
    const sim_cost_model m;
    CHECK(ms(m, 1000, 3, 0.5) == Approx(32.1058589 + 26.31));
    CHECK(ms(m, 100, 1, 0.0) == Approx(18.0239740 + 5.74));
}

TEST_CASE("sim cost: the speedup divides everything, and a zero speedup does not divide by zero",
          "[sim_cost_model]") {
    sim_cost_model m;
    m.speedup = 10.0;
    CHECK(ms(m, 1000, 3, 0.5) == Approx(5.84158589));
    CHECK(ms(m, 0, 1, 0.0) == Approx(0.574));
    m.speedup = 0.5; // slower than the modelled GPU
    CHECK(ms(m, 0, 1, 0.0) == Approx(11.48));
    m.speedup = 0.0; // clamped to 1e-9: huge but finite
    CHECK(ms(m, 0, 1, 0.0) == Approx(5.74e9));
}

TEST_CASE("sim cost: the KV fraction is clamped to 0..1", "[sim_cost_model]") {
    const sim_cost_model m;
    CHECK(ms(m, 0, 1, 2.5) == Approx(34.01));
    CHECK(ms(m, 0, 1, -1.0) == Approx(5.74));
}

TEST_CASE("sim cost: a decode step costs at least 1 ms (before the speedup)", "[sim_cost_model]") {
    sim_cost_model m;
    m.decode_d = 0;
    m.decode_e = 0;
    m.decode_f = 0.25;
    CHECK(ms(m, 0, 1, 0.5) == Approx(1.0));
    m.decode_f = -3.0;
    CHECK(ms(m, 0, 1, 0.5) == Approx(1.0));
    m.decode_e = 4.0; // 4 * 0.5 - 3 = -1: still the floor; at p = 1, 1.0 exactly
    CHECK(ms(m, 0, 1, 0.5) == Approx(1.0));
    CHECK(ms(m, 0, 1, 1.0) == Approx(1.0));
    m.decode_f = 0.0; // 4 * 0.75 = 3
    CHECK(ms(m, 0, 1, 0.75) == Approx(3.0));
    m.speedup = 4.0; // the floor applies before dividing
    CHECK(ms(m, 0, 1, 0.1) == Approx(0.25));
    // The floor is the decode term's alone: prefill adds to it.
    m.prefill_a = m.prefill_b = 0;
    m.prefill_c = 2.0;
    CHECK(ms(m, 10, 1, 0.1) == Approx((2.0 + 1.0) / 4.0));
}

TEST_CASE("sim cost: tensor parallelism splits the token terms and adds two all-reduces a layer",
          "[sim_cost_model]") {
    sim_cost_model one;
    sim_cost_model tp = one;
    tp.tp = 4;
    tp.tp_layers = 2;
    tp.tp_hidden = 1000;
    tp.tp_act_bytes = 2;
    tp.tp_link_gb_per_s = 1;    // 1e9 bytes/s
    tp.tp_link_latency_us = 10; // 0.01 ms
    // Prefill of 100 tokens: (a T^2 + b T) / 4 + c; the all-reduce moves 2 * 3/4 of
    // 100 * 1000 * 2 bytes = 300,000 bytes in 0.3 ms, plus 0.01 ms, twice per layer, two layers.
    const double t = 100;
    const double compute = (one.prefill_a * t * t + one.prefill_b * t) / 4 + one.prefill_c;
    CHECK(ms(tp, 100, 0, 0) == Approx(compute + 4 * (0.01 + 0.3)));
    // Decode: the weight read (f) splits, the KV term does not; one token per sequence moved.
    const double p = 0.5;
    const double decode =
        one.decode_d * p * p + one.decode_e * p + one.decode_f / 4; // above the 1 ms floor
    const double moved = 2.0 * 0.75 * 8 * 1000 * 2 / 1e9 * 1000;    // ms for 8 sequences
    CHECK(ms(tp, 0, 8, p) == Approx(decode + 4 * (0.01 + moved)));
    // TP 1 is the plain model.
    sim_cost_model same = one;
    same.tp = 1;
    same.tp_link_latency_us = 1000;
    CHECK(ms(same, 100, 8, p) == Approx(ms(one, 100, 8, p)));
}
