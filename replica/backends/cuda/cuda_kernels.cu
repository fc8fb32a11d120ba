// Row-wise kernels of the CUDA backend: conversion, embedding, RMSNorm, RoPE + KV store, SwiGLU.
// The attention kernel is in cuda_attention.cu. Each kernel mirrors a step of cpu_backend.cpp.
#include "replica/backends/cuda/cuda_device.cuh"
#include "replica/backends/cuda/cuda_kernels.hpp"

namespace lanes::replica::cuda {

namespace {

constexpr int row_threads = 256; // threads per block of the kernels below

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

// Rows of up to this many float4 per thread are read once, into registers, with all loads in
// flight together (a decode step's rows are few, so each row's latency is what counts).
constexpr int norm_vectors_per_thread = 4;

template <typename T>
__global__ void rms_norm_kernel(const float* x, const std::int32_t* row_index, const float* gain,
                                T* out, int d, float eps) {
    const int r = blockIdx.x;
    const int src = row_index ? row_index[r] : r;
    const float* row = x + static_cast<std::size_t>(src) * d;
    T* dst = out + static_cast<std::size_t>(r) * d;
    if (d % 4 == 0 && d <= 4 * norm_vectors_per_thread * static_cast<int>(blockDim.x)) {
        const auto* row4 = reinterpret_cast<const float4*>(row);
        const auto* gain4 = reinterpret_cast<const float4*>(gain);
        const int n4 = d / 4;
        float4 v[norm_vectors_per_thread];
        float sum = 0.0f;
#pragma unroll
        for (int k = 0; k < norm_vectors_per_thread; ++k) {
            const int i = static_cast<int>(threadIdx.x) + k * static_cast<int>(blockDim.x);
            v[k] = i < n4 ? row4[i] : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            sum += v[k].x * v[k].x + v[k].y * v[k].y + v[k].z * v[k].z + v[k].w * v[k].w;
        }
        sum = block_sum(sum);
        const float inv = 1.0f / sqrtf(sum / static_cast<float>(d) + eps);
#pragma unroll
        for (int k = 0; k < norm_vectors_per_thread; ++k) {
            const int i = static_cast<int>(threadIdx.x) + k * static_cast<int>(blockDim.x);
            if (i >= n4)
                break;
            const float4 gn = gain4[i];
            store(dst + 4 * i, v[k].x * inv * gn.x);
            store(dst + 4 * i + 1, v[k].y * inv * gn.y);
            store(dst + 4 * i + 2, v[k].z * inv * gn.z);
            store(dst + 4 * i + 3, v[k].w * inv * gn.w);
        }
        return;
    }
    float sum = 0.0f;
    for (int i = threadIdx.x; i < d; i += blockDim.x)
        sum += row[i] * row[i];
    sum = block_sum(sum);
    const float inv = 1.0f / sqrtf(sum / static_cast<float>(d) + eps);
    for (int i = threadIdx.x; i < d; i += blockDim.x)
        store(dst + i, row[i] * inv * gain[i]);
}

// One thread per rotated pair (i, i + half) of one head of one row, so a step of few rows still
// spreads over many blocks; a KV head's thread also stores its pair of k and of v in the cache.
// One thread per (row, head) of q, k and v, over the head's head_dim values.
__global__ void qkv_bias_norm_kernel(float* qkv, const float* bias, const float* q_norm,
                                     const float* k_norm, kv_geometry g, float eps, int rows) {
    const int hd = g.head_dim, heads = g.n_heads + 2 * g.n_kv_heads;
    const auto i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= static_cast<long long>(rows) * heads)
        return;
    const int head = static_cast<int>(i % heads);
    const auto r = static_cast<std::size_t>(i / heads);
    float* h = qkv + r * static_cast<std::size_t>(heads) * hd + static_cast<std::size_t>(head) * hd;
    if (bias != nullptr)
        for (int j = 0; j < hd; ++j)
            h[j] += bias[head * hd + j];
    const float* gain =
        head < g.n_heads ? q_norm : (head < g.n_heads + g.n_kv_heads ? k_norm : nullptr);
    if (gain == nullptr)
        return;
    float sum = 0.0f; // the CPU reference accumulates in double; fp32 over <= 256 values
    for (int j = 0; j < hd; ++j)
        sum += h[j] * h[j];
    const float inv = 1.0f / sqrtf(sum / static_cast<float>(hd) + eps);
    for (int j = 0; j < hd; ++j)
        h[j] = h[j] * inv * gain[j];
}

template <typename T>
__global__ void rope_store_kernel(float* qkv, const std::int32_t* pos, const std::int32_t* slot,
                                  T* cache, kv_geometry g, int layer, const float* inv_freq,
                                  int rows) {
    const int hd = g.head_dim, half = hd / 2, heads = g.n_heads + g.n_kv_heads;
    const auto i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= static_cast<long long>(rows) * heads * half)
        return;
    const int j = static_cast<int>(i % half);
    const int head = static_cast<int>((i / half) % heads);
    const int r = static_cast<int>(i / (static_cast<long long>(half) * heads));
    const int q_dim = g.n_heads * hd, kv_dim = g.n_kv_heads * hd;
    float* q = qkv + static_cast<std::size_t>(r) * (q_dim + 2 * kv_dim);
    float* k = q + q_dim;
    // The CPU reference: angle = pos * inv_freq[j], in float.
    float sn, cs;
    sincosf(static_cast<float>(pos[r]) * inv_freq[j], &sn, &cs);
    float* h = head < g.n_heads ? q + head * hd : k + (head - g.n_heads) * hd;
    const float a = h[j], b = h[j + half];
    const float ra = a * cs - b * sn, rb = a * sn + b * cs;
    h[j] = ra;
    h[j + half] = rb;
    const int s = slot[r];
    if (head < g.n_heads || s < 0)
        return; // a query head, or a padding row (nothing stored)
    const int kvh = head - g.n_heads;
    const std::size_t block = static_cast<std::size_t>(s / g.block_size);
    const std::size_t offset = static_cast<std::size_t>(s % g.block_size);
    const std::size_t plane = static_cast<std::size_t>(g.block_size) * kv_dim; // one K or V
    T* k_dst = cache + ((block * g.n_layers + layer) * 2) * plane + offset * kv_dim + kvh * hd;
    T* v_dst = k_dst + plane;
    const float* v = k + kv_dim + kvh * hd;
    store(k_dst + j, ra);
    store(k_dst + j + half, rb);
    store(v_dst + j, v[j]);
    store(v_dst + j + half, v[j + half]);
}

// One thread per output value.
template <typename T>
__global__ void swiglu_kernel(const float* gate_up, T* out, int rows, int d_ff) {
    const auto i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
    if (i >= static_cast<long long>(rows) * d_ff)
        return;
    const auto r = static_cast<std::size_t>(i / d_ff), j = static_cast<std::size_t>(i % d_ff);
    const float* g = gate_up + r * 2 * static_cast<std::size_t>(d_ff);
    const float gv = g[j];
    store(out + i, gv / (1.0f + expf(-gv)) * g[d_ff + j]);
}

unsigned blocks_for(long long n) {
    return static_cast<unsigned>((n + row_threads - 1) / row_threads);
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

void qkv_bias_norm(float* qkv, const float* bias, const float* q_norm, const float* k_norm,
                   const kv_geometry& g, float eps, int rows, cudaStream_t stream) {
    if (rows <= 0 || (bias == nullptr && q_norm == nullptr && k_norm == nullptr))
        return;
    const unsigned grid = blocks_for(static_cast<long long>(rows) * (g.n_heads + 2 * g.n_kv_heads));
    qkv_bias_norm_kernel<<<grid, row_threads, 0, stream>>>(qkv, bias, q_norm, k_norm, g, eps, rows);
}

void rope_store_kv(float* qkv, const std::int32_t* pos, const std::int32_t* slot, void* kv_cache,
                   dtype kv_type, const kv_geometry& g, int layer, const float* inv_freq, int rows,
                   cudaStream_t stream) {
    if (rows <= 0)
        return;
    const unsigned grid =
        blocks_for(static_cast<long long>(rows) * (g.n_heads + g.n_kv_heads) * (g.head_dim / 2));
    if (kv_type == dtype::bf16)
        rope_store_kernel<<<grid, row_threads, 0, stream>>>(
            qkv, pos, slot, static_cast<__nv_bfloat16*>(kv_cache), g, layer, inv_freq, rows);
    else
        rope_store_kernel<<<grid, row_threads, 0, stream>>>(
            qkv, pos, slot, static_cast<float*>(kv_cache), g, layer, inv_freq, rows);
}

void swiglu(const float* gate_up, void* out, dtype out_type, int rows, int d_ff,
            cudaStream_t stream) {
    if (rows <= 0)
        return;
    const unsigned grid = blocks_for(static_cast<long long>(rows) * d_ff);
    if (out_type == dtype::bf16)
        swiglu_kernel<<<grid, row_threads, 0, stream>>>(gate_up, static_cast<__nv_bfloat16*>(out),
                                                        rows, d_ff);
    else
        swiglu_kernel<<<grid, row_threads, 0, stream>>>(gate_up, static_cast<float*>(out), rows,
                                                        d_ff);
}

} // namespace lanes::replica::cuda
