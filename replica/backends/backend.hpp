// Model backends behind one interface. A step hands the backend a batch: for each sequence, the
// tokens to compute now (a prefill chunk, or the one token sampled last step), their start
// position and the sequence's block table. The backend writes their K/V into its paged cache and
// returns the logits of each sequence's last token where asked.
#pragma once

#include "common/prompt/tokenizer.hpp"
#include "replica/backends/model.hpp"
#include "replica/engine/block_manager.hpp"

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::replica {

struct batch_entry {
    std::span<const common::token_id> tokens; // the new tokens
    std::size_t start_pos = 0;                // position of tokens[0] in the sequence
    std::span<const block_id> block_table;    // covers [0, start_pos + tokens.size())
    bool want_logits = false;                 // logits of the last new token
};

class backend {
public:
    virtual ~backend() = default;
    virtual std::string_view name() const = 0;
    // Runs the batch. Appends one logits vector (vocab floats) per entry with want_logits, in
    // batch order. Returns false when this backend computes no logits (sim): the engine then
    // chooses tokens without a model.
    virtual bool forward(std::span<const batch_entry> batch,
                         std::vector<std::vector<float>>& logits) = 0;
};

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

struct backend_options {
    std::string kind = "cpu"; // cpu | sim | cuda
    std::size_t num_blocks = 0;
    std::size_t block_size = 16;
    std::int64_t cpu_threads = 1;
    sim_cost_model sim;
    // cuda: storage dtype of weights and KV cache (bf16 | fp32; accumulation is fp32 in both),
    // whether decode steps replay CUDA graphs, and the most tokens one step computes (the
    // activation buffers are sized for it; a larger step grows them).
    std::string cuda_dtype = "bf16";
    bool cuda_graphs = true;
    std::size_t max_batched_tokens = 2048;
};

// Builds the backend named in options.kind; nullptr with `error` set when it cannot (e.g. cuda
// without a usable device, or a build without CUDA).
std::unique_ptr<backend> make_backend(const backend_options& options, const model_weights& weights,
                                      std::string& error);

// True when this build has the CUDA backend and a device is usable now.
bool cuda_available(std::string* why = nullptr);

} // namespace lanes::replica
