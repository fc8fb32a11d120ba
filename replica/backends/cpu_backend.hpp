// The reference backend: the model on the CPU with OpenBLAS sgemm for every projection and a
// plain paged-attention loop. The CUDA backend is tested against it.
#pragma once

#include "replica/backends/backend.hpp"

namespace lanes::replica {

class cpu_backend final : public backend {
public:
    cpu_backend(model_weights weights, std::size_t num_blocks, std::size_t block_size);

    std::string_view name() const override { return "cpu"; }
    bool forward(std::span<const batch_entry> batch,
                 std::vector<std::vector<float>>& logits) override;

private:
    float* kv_slot(block_id block, std::size_t layer, int which, std::size_t slot);
    void attention(std::span<const batch_entry> batch, std::size_t layer);

    const model_weights w_;
    const std::vector<float> inv_freq_; // RoPE frequencies, head_dim / 2
    std::size_t block_size_;
    std::vector<float> kv_; // [block][layer][k|v][slot][kv_dim]
    // Scratch, reused between steps.
    std::vector<float> x_, h_, qkv_, att_, tmp_, gu_, act_;
    std::vector<std::size_t> pos_;   // position of each batch token
    std::vector<std::size_t> entry_; // entry index of each batch token
};

// RMSNorm of one row: out = x / rms(x) * gain.
void rms_norm(const float* x, const float* gain, float* out, std::size_t n, float eps);
// Rotary embedding (rotate-half form) of one head vector in place at `pos`, with the frequencies
// `inv_freq` (head_dim / 2 of them; model_config::rope_inv_freq).
void apply_rope(float* v, std::size_t head_dim, std::size_t pos, const float* inv_freq);
// The same with plain frequencies theta^(-2i/head_dim).
void apply_rope(float* v, std::size_t head_dim, std::size_t pos, float theta);

} // namespace lanes::replica
