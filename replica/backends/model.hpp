// The replica's model: a Llama-shaped decoder (token embedding, RMSNorm, rotary embeddings,
// grouped-query attention over a paged KV cache, SwiGLU MLP, a separate LM head) over
// the byte vocabulary. Weights are generated from a seed by a counter-based generator, so every
// backend builds bit-identical weights for the same seed without shipping any files.
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

    std::size_t q_dim() const { return n_heads * head_dim; }
    std::size_t kv_dim() const { return n_kv_heads * head_dim; }
    std::size_t parameter_count() const;
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
};

struct model_weights {
    model_config cfg;
    std::vector<float> embedding; // vocab x d_model
    // d_model x vocab. Separate from the embedding: with random weights a tied head mostly
    // echoes the last input token (the residual stream is dominated by its embedding).
    std::vector<float> lm_head;
    std::vector<layer_weights> layers;
    std::vector<float> final_norm; // d_model
};

// Deterministic weights: each value depends only on (seed, tensor, index). Values are uniform in
// ±sqrt(3 / fan_in) (unit-variance outputs), norms are 1 and the embedding is uniform in ±1.
model_weights make_weights(const model_config& cfg, std::uint64_t seed);

// The counter-based generator behind make_weights, exposed for the CUDA backend's parity test:
// a uniform float in [-1, 1).
float weight_value(std::uint64_t seed, std::uint64_t tensor, std::uint64_t index);

} // namespace lanes::replica
