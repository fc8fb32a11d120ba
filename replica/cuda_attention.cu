// Paged attention for prefill and decode in one kernel. A thread block takes one item (up to
// `queries` consecutive query tokens of one sequence) and one KV head, so the K/V it streams
// serve all `group` query heads that share that KV head (grouped-query attention). Keys are read
// in tiles of 32 through the sequence's block table into shared memory (K transposed, so each
// lane lifts one key into registers without bank conflicts and scores it against every row of
// its warp); each warp owns a few query rows and keeps their running max, denominator and output
// in registers (online softmax, fp32). Decode is the case
// of one query per item; a prefill chunk over a cached prefix is the same loop with more keys.
//
// Work and traffic: each item reads its sequence's keys once per KV head, so a prefill of n
// tokens reads the cache n/queries times — served from L2 mostly; the fp32 FMAs are the cost at
// long prompts. A tensor-core (mma) version is the next step for prefill speed; decode, which
// reads each key once per step, is bound by HBM as it is.
#include "replica/cuda_device.cuh"
#include "replica/cuda_kernels.hpp"

#include <cmath>

namespace lanes::replica::cuda {

namespace {

template <int HD>
struct shape {
    static constexpr int warps = 8;
    static constexpr int threads = warps * 32;
    static constexpr int keys = 32;                      // keys per tile, one per lane
    static constexpr int rows = HD <= 64 ? 64 : 16;      // query rows (token x head) per item
    static constexpr int rows_per_warp = rows / warps;   // each warp's rows: warp + k * warps
    static constexpr int dims_per_lane = (HD + 31) / 32; // output dims d = lane + 32 * i
    // Two blocks per SM (registers capped at 128) where a lane's key fits without spilling much.
    static constexpr int min_blocks = HD <= 64 ? 2 : 1;
};

using namespace device;

template <typename T, int HD>
__global__ void __launch_bounds__(shape<HD>::threads, shape<HD>::min_blocks)
    attention_kernel(const float* qkv, const std::int32_t* pos, attention_items items,
                     const T* cache, kv_geometry g, int layer, T* out) {
    using S = shape<HD>;
    __shared__ __align__(16) float q_s[S::rows][HD];
    __shared__ float kt_s[HD][S::keys + 1]; // K transposed, padded against bank conflicts
    __shared__ float v_s[S::keys][HD];

    const int item = blockIdx.x, kvh = blockIdx.y;
    const int count = items.count[item];
    if (count <= 0)
        return; // padding of a decode bucket
    const int first = items.first_row[item];
    const std::int32_t* table = items.tables + items.table_offset[item];
    const int group = g.n_heads / g.n_kv_heads;
    const int rows = count * group; // row r: query token r / group, head kvh * group + r % group
    const int q_dim = g.n_heads * HD, kv_dim = g.n_kv_heads * HD;
    const int qkv_dim = q_dim + 2 * kv_dim;
    const float scale = 1.0f / sqrtf(static_cast<float>(HD));

    for (int i = threadIdx.x; i < rows * HD; i += S::threads) {
        const int r = i / HD, d = i % HD;
        const int head = kvh * group + r % group;
        q_s[r][d] =
            qkv[static_cast<std::size_t>(first + r / group) * qkv_dim + head * HD + d] * scale;
    }

    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int qpos[S::rows_per_warp];
    float m[S::rows_per_warp], l[S::rows_per_warp], o[S::rows_per_warp][S::dims_per_lane];
#pragma unroll
    for (int k = 0; k < S::rows_per_warp; ++k) {
        const int r = warp + k * S::warps;
        qpos[k] = r < rows ? pos[first + r / group] : -1;
        m[k] = -INFINITY;
        l[k] = 0.0f;
#pragma unroll
        for (int i = 0; i < S::dims_per_lane; ++i)
            o[k][i] = 0.0f;
    }

    const int n_keys = pos[first + count - 1] + 1; // what the last query sees
    const std::size_t plane = static_cast<std::size_t>(g.block_size) * kv_dim; // one K or V
    for (int key0 = 0; key0 < n_keys; key0 += S::keys) {
        __syncthreads(); // the previous tile is consumed (and q_s written, the first time)
        for (int i = threadIdx.x; i < S::keys * HD; i += S::threads) {
            const int j = i / HD, d = i % HD, key = key0 + j;
            float kv = 0.0f, vv = 0.0f;
            if (key < n_keys) {
                const auto block = static_cast<std::size_t>(table[key / g.block_size]);
                const auto slot = static_cast<std::size_t>(key % g.block_size);
                const T* k_src =
                    cache + (block * g.n_layers + layer) * 2 * plane + slot * kv_dim + kvh * HD + d;
                kv = load(k_src);
                vv = load(k_src + plane);
            }
            kt_s[d][j] = kv;
            v_s[j][d] = vv;
        }
        __syncthreads();
        // This lane's key, in registers for all of the warp's rows.
        float key[HD];
#pragma unroll
        for (int d = 0; d < HD; ++d)
            key[d] = kt_s[d][lane];
#pragma unroll
        for (int k = 0; k < S::rows_per_warp; ++k) {
            const int r = warp + k * S::warps;
            if (r >= rows)
                continue; // warp-uniform
            const bool visible = key0 + lane <= qpos[k];
            float score = -INFINITY;
            if (visible) {
                float acc = 0.0f;
#pragma unroll
                for (int d = 0; d < HD; d += 4) { // q broadcast from shared memory, 4 at a time
                    const float4 q = *reinterpret_cast<const float4*>(&q_s[r][d]);
                    acc += q.x * key[d] + q.y * key[d + 1] + q.z * key[d + 2] + q.w * key[d + 3];
                }
                score = acc;
            }
            const float tile_max = warp_max(score);
            if (tile_max == -INFINITY)
                continue; // no key of this tile is visible to this row (warp-uniform)
            const float m_new = fmaxf(m[k], tile_max);
            const float correction = expf(m[k] - m_new); // 0 on the first visible tile
            const float p = visible ? expf(score - m_new) : 0.0f;
            l[k] = l[k] * correction + warp_sum(p);
#pragma unroll
            for (int i = 0; i < S::dims_per_lane; ++i)
                o[k][i] *= correction;
#pragma unroll 8
            for (int j = 0; j < S::keys; ++j) {
                const float pj = __shfl_sync(full_mask, p, j);
#pragma unroll
                for (int i = 0; i < S::dims_per_lane; ++i) {
                    const int d = lane + 32 * i;
                    if (d < HD)
                        o[k][i] += pj * v_s[j][d];
                }
            }
            m[k] = m_new;
        }
    }

#pragma unroll
    for (int k = 0; k < S::rows_per_warp; ++k) {
        const int r = warp + k * S::warps;
        if (r >= rows)
            continue;
        const int head = kvh * group + r % group;
        T* dst = out + static_cast<std::size_t>(first + r / group) * q_dim + head * HD;
        const float inv = 1.0f / l[k]; // key 0 is visible to every row, so l > 0
#pragma unroll
        for (int i = 0; i < S::dims_per_lane; ++i) {
            const int d = lane + 32 * i;
            if (d < HD)
                store(dst + d, o[k][i] * inv);
        }
    }
}

template <int HD>
void launch(const float* qkv, const std::int32_t* pos, const attention_items& items, int n_items,
            const void* kv_cache, dtype type, const kv_geometry& g, int layer, void* out,
            cudaStream_t stream) {
    const dim3 grid(static_cast<unsigned>(n_items), static_cast<unsigned>(g.n_kv_heads));
    if (type == dtype::bf16)
        attention_kernel<__nv_bfloat16, HD><<<grid, shape<HD>::threads, 0, stream>>>(
            qkv, pos, items, static_cast<const __nv_bfloat16*>(kv_cache), g, layer,
            static_cast<__nv_bfloat16*>(out));
    else
        attention_kernel<float, HD><<<grid, shape<HD>::threads, 0, stream>>>(
            qkv, pos, items, static_cast<const float*>(kv_cache), g, layer,
            static_cast<float*>(out));
}

int rows_for(int head_dim) {
    switch (head_dim) {
    case 16:
        return shape<16>::rows;
    case 32:
        return shape<32>::rows;
    case 64:
        return shape<64>::rows;
    case 128:
        return shape<128>::rows;
    default:
        return 0;
    }
}

} // namespace

bool attention_supports(int head_dim, int group) {
    return group >= 1 && group <= rows_for(head_dim);
}

int attention_queries_per_item(int head_dim, int group) {
    return rows_for(head_dim) / group;
}

void paged_attention(const float* qkv, const std::int32_t* pos, const attention_items& items,
                     int n_items, const void* kv_cache, dtype type, const kv_geometry& g, int layer,
                     void* out, cudaStream_t stream) {
    if (n_items <= 0)
        return;
    switch (g.head_dim) {
    case 16:
        return launch<16>(qkv, pos, items, n_items, kv_cache, type, g, layer, out, stream);
    case 32:
        return launch<32>(qkv, pos, items, n_items, kv_cache, type, g, layer, out, stream);
    case 64:
        return launch<64>(qkv, pos, items, n_items, kv_cache, type, g, layer, out, stream);
    case 128:
        return launch<128>(qkv, pos, items, n_items, kv_cache, type, g, layer, out, stream);
    default:
        return; // refused at construction (attention_supports)
    }
}

} // namespace lanes::replica::cuda
