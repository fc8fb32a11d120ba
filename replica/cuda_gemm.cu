// Projections of a few rows (decode steps of small batches): y = x · W + beta · y with W
// [in][out] row-major in the storage dtype, x [rows][in] in the storage dtype, y fp32.
//
// cuBLAS's kernels for such skinny products give each thread block a tile of output columns and
// the whole of K, so a 2,048 x 2,048 projection runs on a dozen blocks and the weights, which a
// decode step must stream once, come in at a fraction of HBM bandwidth. Here K is split too: block
// (c, s) takes 128 x V output columns (V values per 16-byte load) and one slice of K, keeps
// rows x V fp32 sums per thread, and writes them to its slice of a workspace; a second kernel
// adds the slices in order (so the result does not depend on scheduling) and beta · y.
#include "replica/cuda_device.cuh"
#include "replica/cuda_kernels.hpp"

#include <algorithm>

namespace lanes::replica::cuda {

namespace {

using namespace device;

constexpr int skinny_threads = 128;
constexpr int max_k_chunk = 1024; // 8 rows x 1,024 fp32 = 32 KiB of shared memory

__device__ __forceinline__ void unpack(const uint4& raw, float (&f)[8]) {
    const auto* h = reinterpret_cast<const __nv_bfloat162*>(&raw);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        const float2 t = __bfloat1622float2(h[i]);
        f[2 * i] = t.x;
        f[2 * i + 1] = t.y;
    }
}

__device__ __forceinline__ void unpack(const uint4& raw, float (&f)[4]) {
    const float4 t = *reinterpret_cast<const float4*>(&raw);
    f[0] = t.x, f[1] = t.y, f[2] = t.z, f[3] = t.w;
}

template <typename T>
constexpr int lanes_of = 16 / static_cast<int>(sizeof(T));

template <typename T, int R>
__global__ void __launch_bounds__(skinny_threads)
    skinny_partial_kernel(const T* __restrict__ x, const T* __restrict__ w,
                          float* __restrict__ partial, int rows, int in, int out, int k_chunk) {
    constexpr int V = lanes_of<T>;
    extern __shared__ float xs[]; // [R][k_chunk]
    const int k0 = blockIdx.y * k_chunk;
    const int kn = min(k_chunk, in - k0);
    for (int i = threadIdx.x; i < R * k_chunk; i += skinny_threads) {
        const int r = i / k_chunk, k = i % k_chunk;
        xs[i] = r < rows && k < kn ? load(x + static_cast<std::size_t>(r) * in + k0 + k) : 0.0f;
    }
    __syncthreads();
    const int col = (blockIdx.x * skinny_threads + threadIdx.x) * V;
    if (col >= out)
        return;
    float acc[R][V];
#pragma unroll
    for (int r = 0; r < R; ++r)
#pragma unroll
        for (int v = 0; v < V; ++v)
            acc[r][v] = 0.0f;
    const T* wp = w + static_cast<std::size_t>(k0) * out + col;
#pragma unroll 8
    for (int k = 0; k < kn; ++k) {
        const uint4 raw = __ldg(reinterpret_cast<const uint4*>(wp + static_cast<std::size_t>(k) * out));
        float wv[V];
        unpack(raw, wv);
#pragma unroll
        for (int r = 0; r < R; ++r) {
            const float xv = xs[r * k_chunk + k];
#pragma unroll
            for (int v = 0; v < V; ++v)
                acc[r][v] = fmaf(xv, wv[v], acc[r][v]);
        }
    }
    float* dst = partial + static_cast<std::size_t>(blockIdx.y) * rows * out + col;
#pragma unroll
    for (int r = 0; r < R; ++r) {
        if (r >= rows)
            break;
#pragma unroll
        for (int v = 0; v < V; v += 4)
            *reinterpret_cast<float4*>(dst + static_cast<std::size_t>(r) * out + v) =
                make_float4(acc[r][v], acc[r][v + 1], acc[r][v + 2], acc[r][v + 3]);
    }
}

__global__ void skinny_reduce_kernel(const float* __restrict__ partial, float* __restrict__ y,
                                     int n, int splits, float beta) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    float sum = 0.0f;
    for (int s = 0; s < splits; ++s)
        sum += partial[static_cast<std::size_t>(s) * n + i];
    y[i] = beta == 0.0f ? sum : sum + beta * y[i]; // beta 0: y may hold anything
}

template <typename T, int R>
void launch_partial(const skinny_plan& p, const void* x, const void* w, float* partial, int rows,
                    int in, int out, cudaStream_t stream) {
    const dim3 grid(static_cast<unsigned>(p.col_tiles), static_cast<unsigned>(p.splits));
    const std::size_t shared = static_cast<std::size_t>(R) * p.k_chunk * sizeof(float);
    skinny_partial_kernel<T, R><<<grid, skinny_threads, shared, stream>>>(
        static_cast<const T*>(x), static_cast<const T*>(w), partial, rows, in, out, p.k_chunk);
}

template <typename T>
void launch_partial(const skinny_plan& p, const void* x, const void* w, float* partial, int rows,
                    int in, int out, cudaStream_t stream) {
    if (rows <= 1)
        launch_partial<T, 1>(p, x, w, partial, rows, in, out, stream);
    else if (rows <= 2)
        launch_partial<T, 2>(p, x, w, partial, rows, in, out, stream);
    else if (rows <= 4)
        launch_partial<T, 4>(p, x, w, partial, rows, in, out, stream);
    else
        launch_partial<T, 8>(p, x, w, partial, rows, in, out, stream);
}

} // namespace

skinny_plan plan_skinny_gemm(dtype type, int rows, int in, int out, int sm_count) {
    skinny_plan p;
    const int v = type == dtype::bf16 ? lanes_of<__nv_bfloat16> : lanes_of<float>;
    if (rows < 1 || rows > skinny_max_rows || in < 1 || out < v || out % v != 0)
        return p; // not supported: splits stays 0
    const int cols_per_block = skinny_threads * v;
    p.col_tiles = (out + cols_per_block - 1) / cols_per_block;
    // About four blocks per multiprocessor, each slice long enough that the workspace traffic
    // (splits x rows x out fp32) stays a small share of the weights' (in x out).
    const int want = std::max(1, (4 * std::max(sm_count, 1) + p.col_tiles - 1) / p.col_tiles);
    const int min_chunk = rows <= 2 ? 32 : 64;
    int chunk = std::max(min_chunk, (in + want - 1) / want);
    chunk = std::min({(chunk + 7) / 8 * 8, max_k_chunk, in});
    p.k_chunk = chunk;
    p.splits = (in + chunk - 1) / chunk;
    return p;
}

std::size_t skinny_workspace_floats(const skinny_plan& p, int rows, int out) {
    return static_cast<std::size_t>(p.splits) * static_cast<std::size_t>(rows) *
           static_cast<std::size_t>(out);
}

void skinny_gemm(const skinny_plan& p, const void* x, const void* w, dtype type, float* y,
                 int rows, int in, int out, float beta, float* workspace, cudaStream_t stream) {
    if (p.splits <= 0 || rows <= 0)
        return;
    if (type == dtype::bf16)
        launch_partial<__nv_bfloat16>(p, x, w, workspace, rows, in, out, stream);
    else
        launch_partial<float>(p, x, w, workspace, rows, in, out, stream);
    const int n = rows * out;
    skinny_reduce_kernel<<<(n + 255) / 256, 256, 0, stream>>>(workspace, y, n, p.splits, beta);
}

} // namespace lanes::replica::cuda
