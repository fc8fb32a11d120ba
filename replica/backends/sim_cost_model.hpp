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

    // Tensor parallelism, modelled (lanes-bench simulate --tp; a lanes replica is never TP):
    // the step's matmuls split `tp` ways, so the prefill's token terms (a, b) and the decode's
    // weight read (f) are divided by tp while the per-step constant (c) is not; the KV term
    // (d, e) stays as it is, p being each GPU's own KV fill (its share of the tokens over its
    // share of the capacity); and every layer pays two ring all-reduces of the step's
    // activations (tokens x hidden x act_bytes, 2 (tp - 1) / tp of it over the link) plus the
    // link's latency each. Defaults: a Llama-3-8B-sized model over NVLink-class links.
    std::size_t tp = 1;
    std::size_t tp_layers = 32;
    std::size_t tp_hidden = 4096;
    double tp_act_bytes = 2;
    double tp_link_gb_per_s = 300;
    double tp_link_latency_us = 10;

    // The modelled duration of one step (prefill_tokens uncached prompt tokens, decode_seqs
    // decodes, kv_fraction of the KV capacity active).
    std::chrono::duration<double, std::milli>
    step_time(std::size_t prefill_tokens, std::size_t decode_seqs, double kv_fraction) const;
};

} // namespace lanes::replica
