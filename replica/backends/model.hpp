// The replica's model: a Llama-shaped decoder (token embedding, RMSNorm, rotary embeddings,
// grouped-query attention over a paged KV cache, SwiGLU MLP, an LM head), with the variants of
// the families lanes loads from checkpoints (replica/models/): q/k/v biases (Qwen2), RMSNorm of
// each q and k head before RoPE (Qwen3), llama3 and linear RoPE scaling, an explicit head_dim.
// Without a checkpoint the weights of a preset are generated from a seed by a counter-based
// generator, so every backend builds bit-identical weights for the same seed without any files.
#pragma once

#include "common/prompt/tokenizer.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::replica {

struct model_config {
    std::string name;
    std::size_t d_model = 64;
    std::size_t n_layers = 2;
    std::size_t n_heads = 4;
    std::size_t n_kv_heads = 2;
    std::size_t head_dim = 16;
    std::size_t d_ff = 128;
    std::size_t vocab = common::vocab_size;
    float rms_eps = 1e-5f;
    float rope_theta = 10000.0f;
    // RoPE frequencies: plain theta^(-2i/head_dim), divided by `factor` (linear), or Llama 3.1's
    // rule (transformers' _compute_llama3_parameters).
    enum class rope_kind { plain, linear, llama3 } rope = rope_kind::plain;
    float rope_factor = 1.0f;
    float rope_low_freq_factor = 1.0f;
    float rope_high_freq_factor = 4.0f;
    float rope_original_max_positions = 8192.0f;
    bool qkv_bias = false;         // Qwen2: q, k and v projections carry a bias
    bool qk_norm = false;          // Qwen3: RMSNorm over each q and k head before RoPE
    bool tie_embeddings = false;   // the LM head is the embedding (a checkpoint's, when saved)
    std::size_t max_positions = 0; // max_position_embeddings; 0: unbounded (presets)

    std::size_t q_dim() const { return n_heads * head_dim; }
    std::size_t kv_dim() const { return n_kv_heads * head_dim; }
    std::size_t parameter_count() const;
    // inv_freq[i] for i < head_dim / 2, after the scaling rule.
    std::vector<float> rope_inv_freq() const;
    // Bytes of K and V for one token across all layers, at `bytes_per_value`.
    std::size_t kv_bytes_per_token(std::size_t bytes_per_value) const {
        return 2 * n_layers * kv_dim() * bytes_per_value;
    }
};

// tiny (unit tests), small (~25M), base (~125M), 1b (~1B, TinyLlama's shape).
std::optional<model_config> preset(std::string_view name);

// One layer's weights, row-major [in][out] so y = x · W with x a row vector.
struct layer_weights {
    std::vector<float> attn_norm; // d_model
    std::vector<float> wqkv;      // d_model x (q_dim + 2 kv_dim)
    std::vector<float> wo;        // q_dim x d_model
    std::vector<float> mlp_norm;  // d_model
    std::vector<float> w_gate_up; // d_model x (2 d_ff): gate columns then up columns
    std::vector<float> w_down;    // d_ff x d_model
    std::vector<float> qkv_bias;  // q_dim + 2 kv_dim when cfg.qkv_bias, else empty
    std::vector<float> q_norm;    // head_dim when cfg.qk_norm, else empty
    std::vector<float> k_norm;    // head_dim when cfg.qk_norm, else empty
};

struct model_weights {
    model_config cfg;
    std::vector<float> embedding; // vocab x d_model
    // d_model x vocab. Presets keep it apart from the embedding: with random weights a tied head
    // mostly echoes the last input token (the residual stream is dominated by its embedding). A
    // tied checkpoint's is the embedding, transposed once at load.
    std::vector<float> lm_head;
    std::vector<layer_weights> layers;
    std::vector<float> final_norm; // d_model
};

// Deterministic weights: each value depends only on (seed, tensor, index). Values are uniform in
// ±sqrt(3 / fan_in) (unit-variance outputs), norms are 1 and the embedding is uniform in ±1. The
// variants cfg asks for get their tensors too (q/k/v biases, q/k norm gains; a tied head is the
// embedding).
model_weights make_weights(const model_config& cfg, std::uint64_t seed);

// Makes the LM head the embedding (transposed into the head's d_model x vocab layout).
void tie_lm_head(model_weights& w);

// The counter-based generator behind make_weights, exposed for the CUDA backend's parity test:
// a uniform float in [-1, 1).
float weight_value(std::uint64_t seed, std::uint64_t tensor, std::uint64_t index);

} // namespace lanes::replica
