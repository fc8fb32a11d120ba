// Row-wise kernels of the CUDA backend: conversion, embedding, RMSNorm, RoPE + KV store, SwiGLU.
// The attention kernel is in cuda_attention.cu. Each kernel mirrors a step of cpu_backend.cpp.
#include "replica/cuda_device.cuh"
#include "replica/cuda_kernels.hpp"

namespace lanes::replica::cuda {

namespace {

constexpr int row_threads = 256; // threads per row for the row-wise kernels

using namespace device;

__global__ void convert_kernel(const float* src, __nv_bfloat16* dst, std::size_t n) {
    const std::size_t stride = static_cast<std::size_t>(gridDim.x) * blockDim.x;
    for (std::size_t i = static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
         i += stride)
        dst[i] = __float2bfloat16_rn(src[i]);
}

__global__ void embed_kernel(const float* embedding, const std::int32_t* tokens, float* x, int d,
                             int vocab) {
    const int r = blockIdx.x;
    const int tok = min(max(tokens[r], 0), vocab - 1);
    const float* src = embedding + static_cast<std::size_t>(tok) * d;
    float* dst = x + static_cast<std::size_t>(r) * d;
    for (int i = threadIdx.x; i < d; i += blockDim.x)
        dst[i] = src[i];
}

// Sum of `v` over the block (blockDim.x a multiple of 32, at most 1024), returned to every thread.
__device__ float block_sum(float v) {
    __shared__ float partial[32];
    v = warp_sum(v);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0)
        partial[warp] = v;
    __syncthreads();
    const int warps = blockDim.x / 32;
    float total = 0.0f;
    for (int w = 0; w < warps; ++w)
        total += partial[w];
    __syncthreads(); // partial may be reused by a later call
    return total;
}

template <typename T>
__global__ void rms_norm_kernel(const float* x, const std::int32_t* row_index, const float* gain,
                                T* out, int d, float eps) {
    const int r = blockIdx.x;
    const int src = row_index ? row_index[r] : r;
    const float* row = x + static_cast<std::size_t>(src) * d;
    float sum = 0.0f;
    for (int i = threadIdx.x; i < d; i += blockDim.x)
        sum += row[i] * row[i];
    sum = block_sum(sum);
    const float inv = 1.0f / sqrtf(sum / static_cast<float>(d) + eps);
    T* dst = out + static_cast<std::size_t>(r) * d;
    for (int i = threadIdx.x; i < d; i += blockDim.x)
        store(dst + i, row[i] * inv * gain[i]);
}

// One block per row; thread i of the loop handles pair (i, i + half) of one head.
template <typename T>
__global__ void rope_store_kernel(float* qkv, const std::int32_t* pos, const std::int32_t* slot,
                                  T* cache, kv_geometry g, int layer, float theta) {
    const int r = blockIdx.x;
    const int hd = g.head_dim, half = hd / 2;
    const int q_dim = g.n_heads * hd, kv_dim = g.n_kv_heads * hd;
    float* q = qkv + static_cast<std::size_t>(r) * (q_dim + 2 * kv_dim);
    float* k = q + q_dim;
    const float* v = k + kv_dim;
    const float p = static_cast<float>(pos[r]);
    const int pairs = (g.n_heads + g.n_kv_heads) * half;
    for (int i = threadIdx.x; i < pairs; i += blockDim.x) {
        const int head = i / half, j = i % half;
        // The CPU reference: freq = theta^(-2j/hd), angle = pos * freq, in float.
        const float freq = powf(theta, -2.0f * static_cast<float>(j) / static_cast<float>(hd));
        float s, c;
        sincosf(p * freq, &s, &c);
        float* h = head < g.n_heads ? q + head * hd : k + (head - g.n_heads) * hd;
        const float a = h[j], b = h[j + half];
        h[j] = a * c - b * s;
        h[j + half] = a * s + b * c;
    }
    const int s = slot[r];
    if (s < 0)
        return;
    __syncthreads(); // k is rotated before it is stored
    const std::size_t block = static_cast<std::size_t>(s / g.block_size);
    const std::size_t offset = static_cast<std::size_t>(s % g.block_size);
    const std::size_t plane = static_cast<std::size_t>(g.block_size) * kv_dim; // one K or V
    T* k_dst = cache + ((block * g.n_layers + layer) * 2) * plane + offset * kv_dim;
    T* v_dst = k_dst + plane;
    for (int i = threadIdx.x; i < kv_dim; i += blockDim.x) {
        store(k_dst + i, k[i]);
        store(v_dst + i, v[i]);
    }
}

template <typename T>
__global__ void swiglu_kernel(const float* gate_up, T* out, int d_ff) {
    const int r = blockIdx.x;
    const float* g = gate_up + static_cast<std::size_t>(r) * 2 * d_ff;
    const float* u = g + d_ff;
    T* dst = out + static_cast<std::size_t>(r) * d_ff;
    for (int i = threadIdx.x; i < d_ff; i += blockDim.x)
        store(dst + i, g[i] / (1.0f + expf(-g[i])) * u[i]);
}

} // namespace

void convert_to_bf16(const float* src, void* dst, std::size_t n, cudaStream_t stream) {
    if (n == 0)
        return;
    const std::size_t blocks = (n + row_threads - 1) / row_threads;
    const unsigned grid = static_cast<unsigned>(blocks < 65535 ? blocks : 65535);
    convert_kernel<<<grid, row_threads, 0, stream>>>(src, static_cast<__nv_bfloat16*>(dst), n);
}

void embed(const float* embedding, const std::int32_t* tokens, float* x, int rows, int d, int vocab,
           cudaStream_t stream) {
    if (rows > 0)
        embed_kernel<<<rows, row_threads, 0, stream>>>(embedding, tokens, x, d, vocab);
}

void rms_norm(const float* x, const std::int32_t* row_index, const float* gain, void* out,
              dtype out_type, int rows, int d, float eps, cudaStream_t stream) {
    if (rows <= 0)
        return;
    if (out_type == dtype::bf16)
        rms_norm_kernel<<<rows, row_threads, 0, stream>>>(x, row_index, gain,
                                                          static_cast<__nv_bfloat16*>(out), d, eps);
    else
        rms_norm_kernel<<<rows, row_threads, 0, stream>>>(x, row_index, gain,
                                                          static_cast<float*>(out), d, eps);
}

void rope_store_kv(float* qkv, const std::int32_t* pos, const std::int32_t* slot, void* kv_cache,
                   dtype kv_type, const kv_geometry& g, int layer, float theta, int rows,
                   cudaStream_t stream) {
    if (rows <= 0)
        return;
    if (kv_type == dtype::bf16)
        rope_store_kernel<<<rows, row_threads, 0, stream>>>(
            qkv, pos, slot, static_cast<__nv_bfloat16*>(kv_cache), g, layer, theta);
    else
        rope_store_kernel<<<rows, row_threads, 0, stream>>>(
            qkv, pos, slot, static_cast<float*>(kv_cache), g, layer, theta);
}

void swiglu(const float* gate_up, void* out, dtype out_type, int rows, int d_ff,
            cudaStream_t stream) {
    if (rows <= 0)
        return;
    if (out_type == dtype::bf16)
        swiglu_kernel<<<rows, row_threads, 0, stream>>>(gate_up, static_cast<__nv_bfloat16*>(out),
                                                        d_ff);
    else
        swiglu_kernel<<<rows, row_threads, 0, stream>>>(gate_up, static_cast<float*>(out), d_ff);
}

} // namespace lanes::replica::cuda
