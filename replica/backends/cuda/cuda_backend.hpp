// The CUDA backend: the model of replica/model.hpp on one GPU. Plain C++ (no CUDA headers), so
// the rest of the replica stays host-only; the definitions are compiled only when LANES_CUDA is
// on (callers guard with LANES_HAVE_CUDA). The byte counts below are inline so a build without
// CUDA can still print them (the engine bench derives its HBM bound from them).
//
// Layout on the device:
// - weights: the projections (wqkv, wo, w_gate_up, w_down, lm_head) in the storage dtype (bf16 by
//   default, fp32 for tight parity tests), row-major [in][out] exactly as on the host; the
//   embedding and the norm gains stay fp32 (a gather and a few vectors: no bandwidth to save).
// - KV cache: one cudaMalloc, [block][layer][k|v][slot][kv_dim] in the storage dtype, the CPU
//   backend's layout.
// - activations: the residual stream and every GEMM output in fp32; GEMM inputs (normed rows,
//   attention output, SwiGLU output) in the storage dtype; cuBLAS accumulates in fp32.
#pragma once

#include "replica/backends/backend.hpp"

#include <cstddef>
#include <memory>
#include <string>

namespace lanes::replica {

// Bytes per stored value for a --cuda-dtype name (bf16: 2, fp32: 4); 0 for an unknown name.
inline std::size_t cuda_dtype_bytes(const std::string& dtype) {
    if (dtype == "bf16")
        return 2;
    if (dtype == "fp32")
        return 4;
    return 0;
}

// Bytes of the projection matrices (LM head included): what one decode step must read.
inline std::size_t cuda_projection_bytes(const model_config& c, std::size_t bytes_per_value) {
    const std::size_t per_layer = c.d_model * (c.q_dim() + 2 * c.kv_dim()) + c.q_dim() * c.d_model +
                                  c.d_model * 2 * c.d_ff + c.d_ff * c.d_model;
    return (c.n_layers * per_layer + c.d_model * c.vocab) * bytes_per_value;
}

// Bytes of all weights on the device: projections, plus the fp32 embedding, norm gains, biases
// and q/k norms. (A tied LM head is stored apart from the embedding, in the storage dtype.)
inline std::size_t cuda_weight_bytes(const model_config& c, std::size_t bytes_per_value) {
    const std::size_t fp32_values = c.vocab * c.d_model + (2 * c.n_layers + 1) * c.d_model +
                                    c.n_layers * ((c.qkv_bias ? c.q_dim() + 2 * c.kv_dim() : 0) +
                                                  (c.qk_norm ? 2 * c.head_dim : 0));
    return cuda_projection_bytes(c, bytes_per_value) + fp32_values * sizeof(float);
}

// Bytes of one KV block (all layers, K and V) on the device.
inline std::size_t cuda_kv_block_bytes(const model_config& c, std::size_t block_size,
                                       std::size_t bytes_per_value) {
    return c.kv_bytes_per_token(bytes_per_value) * block_size;
}

// Device memory the backend takes besides weights and KV cache for a step of up to `max_tokens`
// tokens and `max_seqs` sequences: activations, metadata, logits (a row per sequence), the
// cuBLAS workspace and staging, with a margin for the CUDA context's allocations and graphs.
std::size_t cuda_reserve_bytes(const model_config& c, std::size_t max_tokens, std::size_t max_seqs);

// Builds the backend on device 0: uploads the weights (converted to options.cuda_dtype) and
// takes the KV cache. nullptr with `error` set when it cannot (unsupported shape, out of
// memory, a CUDA or cuBLAS failure).
std::unique_ptr<backend> make_cuda_backend(const backend_options& options,
                                           const model_weights& weights, std::string& error);

} // namespace lanes::replica
