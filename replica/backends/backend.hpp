// Model backends behind one interface. A step hands the backend a batch: for each sequence, the
// tokens to compute now (a prefill chunk, or the one token sampled last step), their start
// position and the sequence's block table. The backend writes their K/V into its paged cache and
// returns the logits of each sequence's last token where asked.
#pragma once

#include "common/prompt/tokenizer.hpp"
#include "replica/backends/model.hpp"
#include "replica/backends/sim_cost_model.hpp"

#include "replica/engine/block_manager.hpp"
#include <optional>

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::replica {

struct replica_config;

struct batch_entry {
    std::span<const common::token_id> tokens; // the new tokens
    std::size_t start_pos = 0;                // position of tokens[0] in the sequence
    std::span<const block_id> block_table;    // covers [0, start_pos + tokens.size())
    bool want_logits = false;                 // logits of the last new token
};

enum class backend_kind { cpu, sim, cuda };

std::string_view to_string(backend_kind kind);
// "cpu", "sim" or "cuda"; nullopt for anything else.
std::optional<backend_kind> parse_backend_kind(std::string_view name);

class backend {
public:
    virtual ~backend() = default;
    virtual std::string_view name() const = 0;
    // The name and what else the start-up log should say of it (dtype, graphs, ...).
    virtual std::string describe() const { return std::string(name()); }
    // Runs the batch. Appends one logits vector (vocab floats) per entry with want_logits, in
    // batch order. Returns false when this backend computes no logits (sim): the engine then
    // chooses tokens without a model.
    virtual bool forward(std::span<const batch_entry> batch,
                         std::vector<std::vector<float>>& logits) = 0;
};

struct backend_options {
    backend_kind kind = backend_kind::cpu;
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
    std::size_t max_num_seqs = 64; // sequences per step: the logits buffers' rows
};

// Builds the backend of options.kind over `weights` (the sim backend ignores them); nullptr with
// `error` set when it cannot (e.g. cuda without a usable device, or a build without CUDA).
std::unique_ptr<backend> make_backend(const backend_options& options, model_weights weights,
                                      std::string& error);

// True when this build has the CUDA backend and a device is usable now.
bool cuda_available(std::string* why = nullptr);

// What `--backend` resolves to: `auto` is cuda when a device is usable, else cpu; `note` says
// which and why (for the start-up log; empty for a backend named outright).
backend_kind resolve_backend(std::string_view requested, std::string& note);

// KV blocks to allocate: --kv-blocks when set; else, for the cuda backend, the
// --gpu-memory-utilization fraction of the device memory left after weights and step buffers;
// else what fits in --kv-cache-mb for this model. Budget-derived counts are capped by
// --max-auto-kv-blocks.
std::size_t resolve_kv_blocks(const replica_config& cfg, const model_config& model,
                              backend_kind kind);

// The model the config names: --model's config.json, else the preset's shape with the
// vocabulary of the model's tokenizer when one is loaded.
model_config replica_model(const replica_config& cfg);
// Its weights: the checkpoint's (read as fp32, the load logged), else made from the seed.
model_weights replica_weights(const replica_config& cfg);
// The backend the replica's config asks for, with cfg.kv_blocks blocks (resolved): its kind
// resolved, with replica_weights when the kind computes (the sim backend takes none), or the
// weights given. Throws std::runtime_error when it cannot be built.
std::unique_ptr<backend> build_backend(const replica_config& cfg, backend_kind kind);
std::unique_ptr<backend> build_backend(const replica_config& cfg, backend_kind kind,
                                       model_weights weights);

} // namespace lanes::replica
