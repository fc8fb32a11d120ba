#include "replica/backends/cuda/cuda_weights.hpp"

#include <algorithm>

namespace lanes::replica {

device_weights::device_weights(const model_weights& weights, cuda::dtype storage,
                               cudaStream_t stream) {
    std::size_t largest = weights.lm_head.size();
    for (const auto& lw : weights.layers)
        largest = std::max(
            {largest, lw.wqkv.size(), lw.wo.size(), lw.w_gate_up.size(), lw.w_down.size()});
    // fp32 values on their way to bf16; one buffer for all, reused in stream order.
    device_memory staging(storage == cuda::dtype::bf16 ? largest * sizeof(float) : 0);
    embedding = upload_f32(weights.embedding, stream);
    auto optional_f32 = [&](const std::vector<float>& v) {
        return v.empty() ? nullptr : upload_f32(v, stream);
    };
    for (const auto& lw : weights.layers)
        layers.push_back(
            {upload_f32(lw.attn_norm, stream), upload_projection(lw.wqkv, staging, storage, stream),
             upload_projection(lw.wo, staging, storage, stream), upload_f32(lw.mlp_norm, stream),
             upload_projection(lw.w_gate_up, staging, storage, stream),
             upload_projection(lw.w_down, staging, storage, stream), optional_f32(lw.qkv_bias),
             optional_f32(lw.q_norm), optional_f32(lw.k_norm)});
    final_norm = upload_f32(weights.final_norm, stream);
    lm_head = upload_projection(weights.lm_head, staging, storage, stream);
    const std::vector<float> inv_freq = weights.cfg.rope_inv_freq();
    rope_inv_freq = upload_f32(inv_freq, stream);
    check(cudaStreamSynchronize(stream), "uploading the weights"); // before `staging` goes
}

const float* device_weights::upload_f32(const std::vector<float>& values, cudaStream_t stream) {
    device_memory& m = memory_.emplace_back(values.size() * sizeof(float));
    check(cudaMemcpyAsync(m.get(), values.data(), m.size(), cudaMemcpyHostToDevice, stream),
          "uploading weights");
    return m.get<float>();
}

const void* device_weights::upload_projection(const std::vector<float>& values,
                                              device_memory& staging, cuda::dtype storage,
                                              cudaStream_t stream) {
    if (storage == cuda::dtype::f32)
        return upload_f32(values, stream);
    device_memory& m = memory_.emplace_back(values.size() * 2); // bf16
    // Stream-ordered: the next tensor's copy into `staging` waits for this conversion.
    check(cudaMemcpyAsync(staging.get(), values.data(), values.size() * sizeof(float),
                          cudaMemcpyHostToDevice, stream),
          "uploading weights");
    cuda::convert_to_bf16(staging.get<float>(), m.get(), values.size(), stream);
    check(cudaGetLastError(), "converting weights to bf16");
    return m.get();
}

} // namespace lanes::replica
