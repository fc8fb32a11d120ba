// The sim backend's cost model: how long a modelled GPU takes for one engine step.
#pragma once

#include <chrono>
#include <cstddef>

namespace lanes::replica {

// The sim backend's cost model, in milliseconds per engine step (defaults: NVIDIA Dynamo's mocker,
// lib/mocker/src/common/perf_model.rs): prefill(T) = a·T² + b·T + c for T uncached prompt tokens
// in the step, decode(p) = d·p² + e·p + f for p = active KV tokens / KV capacity (floored at
// 1 ms); a step with both pays both. Everything is divided by `speedup`.
struct sim_cost_model {
    double prefill_a = 4.209989e-7;
    double prefill_b = 1.518344e-2;
    double prefill_c = 16.50142;
    double decode_d = -25.74;
    double decode_e = 54.01;
    double decode_f = 5.74;
    double speedup = 1.0;

    // The modelled duration of one step.
    std::chrono::duration<double, std::milli>
    step_time(std::size_t prefill_tokens, std::size_t decode_seqs, double kv_fraction) const;
};

} // namespace lanes::replica
