// The model's weights on the device: the projections in the storage dtype (converted to bf16 on
// the device when asked), the embedding, the norm gains, the q/k/v biases and the RoPE
// frequency table in fp32.
#pragma once

#include "replica/backends/cuda/cuda_kernels.hpp"
#include "replica/backends/cuda/cuda_memory.hpp"
#include "replica/backends/model.hpp"

#include <cuda_runtime.h>

#include <vector>

namespace lanes::replica {

class device_weights {
public:
    struct layer {
        const float* attn_norm;
        const void* wqkv;
        const void* wo;
        const float* mlp_norm;
        const void* w_gate_up;
        const void* w_down;
        const float* qkv_bias; // null unless the model has q/k/v biases
        const float* q_norm;   // null unless the model norms q and k heads
        const float* k_norm;
    };

    device_weights() = default;
    // Uploads on `stream` and waits for them.
    device_weights(const model_weights& weights, cuda::dtype storage, cudaStream_t stream);

    const float* embedding = nullptr;
    std::vector<layer> layers;
    const float* final_norm = nullptr;
    const void* lm_head = nullptr;
    const float* rope_inv_freq = nullptr; // head_dim / 2 frequencies

private:
    const float* upload_f32(const std::vector<float>& values, cudaStream_t stream);
    const void* upload_projection(const std::vector<float>& values, device_memory& staging,
                                  cuda::dtype storage, cudaStream_t stream);

    std::vector<device_memory> memory_;
};

} // namespace lanes::replica
