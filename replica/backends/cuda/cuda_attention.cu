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
// long prompts. A tensor-core (mma) version is the next step for prefill speed.
//
// Split keys: a step with few items (a decode of a small batch; a short prefill over a long
// cached prefix) would leave most multiprocessors idle while a few blocks walk long contexts tile
// by tile. Such a step splits each item's keys into `splits` equal shares (blockIdx.z), each
// block writes its rows' unnormalised output with their running max and denominator to a
// workspace, and a second kernel merges the shares (flash-decoding's scheme).
#include "replica/backends/cuda/cuda_device.cuh"
#include "replica/backends/cuda/cuda_kernels.hpp"

#include <algorithm>
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
                     const T* cache, kv_geometry g, int layer, T* out, int splits, float* part_o,
                     float* part_ml) {
    using S = shape<HD>;
    __shared__ __align__(16) float q_s[S::rows][HD];
    __shared__ float kt_s[HD][S::keys + 1]; // K transposed, padded against bank conflicts
    __shared__ float v_s[S::keys][HD];

    const int item = blockIdx.x, kvh = blockIdx.y, split = blockIdx.z;
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
    // This block's share of the keys: all of them, or whole tiles of an equal split (a share
    // may be empty when the context is short).
    int k_begin = 0, k_end = n_keys;
    if (splits > 1) {
        const int per = ((n_keys + splits - 1) / splits + S::keys - 1) / S::keys * S::keys;
        k_begin = min(split * per, n_keys);
        k_end = min(n_keys, k_begin + per);
    }
    const std::size_t plane = static_cast<std::size_t>(g.block_size) * kv_dim; // one K or V
    for (int key0 = k_begin; key0 < k_end; key0 += S::keys) {
        __syncthreads(); // the previous tile is consumed (and q_s written, the first time)
        for (int i = threadIdx.x; i < S::keys * HD; i += S::threads) {
            const int j = i / HD, d = i % HD, key = key0 + j;
            float kv = 0.0f, vv = 0.0f;
            if (key < k_end) {
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
            const bool visible = key0 + lane < k_end && key0 + lane <= qpos[k];
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

    if (splits > 1) { // this share's unnormalised rows, for attention_combine_kernel
#pragma unroll
        for (int k = 0; k < S::rows_per_warp; ++k) {
            const int r = warp + k * S::warps;
            if (r >= rows)
                continue;
            const std::size_t at =
                ((static_cast<std::size_t>(item) * g.n_kv_heads + kvh) * splits + split) * S::rows +
                r;
#pragma unroll
            for (int i = 0; i < S::dims_per_lane; ++i) {
                const int d = lane + 32 * i;
                if (d < HD)
                    part_o[at * HD + d] = o[k][i];
            }
            if (lane == 0) {
                part_ml[2 * at] = m[k]; // -inf (and l = 0) when no key of the share is visible
                part_ml[2 * at + 1] = l[k];
            }
        }
        return;
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

// Merges the shares of split keys: per row, the shares' outputs weighted by exp(m_s - M), over
// the sum of their denominators weighted alike (M: the largest running max). Share 0 holds key 0,
// which every row sees, so the sum is positive.
template <typename T, int HD>
__global__ void attention_combine_kernel(attention_items items, kv_geometry g, int splits,
                                         const float* part_o, const float* part_ml, T* out) {
    using S = shape<HD>;
    const int item = blockIdx.x, kvh = blockIdx.y;
    const int count = items.count[item];
    if (count <= 0)
        return; // padding of a decode bucket
    const int first = items.first_row[item];
    const int group = g.n_heads / g.n_kv_heads;
    const int rows = count * group, q_dim = g.n_heads * HD;
    const std::size_t share0 = (static_cast<std::size_t>(item) * g.n_kv_heads + kvh) * splits;
    for (int i = threadIdx.x; i < rows * HD; i += blockDim.x) {
        const int r = i / HD, d = i % HD;
        float top = -INFINITY;
        for (int s = 0; s < splits; ++s)
            top = fmaxf(top, part_ml[2 * ((share0 + s) * S::rows + r)]);
        float sum = 0.0f, acc = 0.0f;
        for (int s = 0; s < splits; ++s) {
            const std::size_t at = (share0 + s) * S::rows + r;
            const float m = part_ml[2 * at];
            if (m == -INFINITY)
                continue;
            const float w = expf(m - top);
            sum += part_ml[2 * at + 1] * w;
            acc += part_o[at * HD + d] * w;
        }
        const int head = kvh * group + r % group;
        store(out + static_cast<std::size_t>(first + r / group) * q_dim + head * HD + d, acc / sum);
    }
}

template <typename T, int HD>
void launch_typed(const float* qkv, const std::int32_t* pos, const attention_items& items,
                  int n_items, const T* cache, const kv_geometry& g, int layer, T* out,
                  const attention_split& split, cudaStream_t stream) {
    const int splits = split.splits > 1 ? split.splits : 1;
    const dim3 grid(static_cast<unsigned>(n_items), static_cast<unsigned>(g.n_kv_heads),
                    static_cast<unsigned>(splits));
    attention_kernel<T, HD><<<grid, shape<HD>::threads, 0, stream>>>(
        qkv, pos, items, cache, g, layer, out, splits, split.part_o, split.part_ml);
    if (splits > 1)
        attention_combine_kernel<T, HD>
            <<<dim3(static_cast<unsigned>(n_items), static_cast<unsigned>(g.n_kv_heads)), 256, 0,
               stream>>>(items, g, splits, split.part_o, split.part_ml, out);
}

template <int HD>
void launch(const float* qkv, const std::int32_t* pos, const attention_items& items, int n_items,
            const void* kv_cache, dtype type, const kv_geometry& g, int layer, void* out,
            const attention_split& split, cudaStream_t stream) {
    if (type == dtype::bf16)
        launch_typed<__nv_bfloat16, HD>(qkv, pos, items, n_items,
                                        static_cast<const __nv_bfloat16*>(kv_cache), g, layer,
                                        static_cast<__nv_bfloat16*>(out), split, stream);
    else
        launch_typed<float, HD>(qkv, pos, items, n_items, static_cast<const float*>(kv_cache), g,
                                layer, static_cast<float*>(out), split, stream);
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

int attention_splits(int items, int n_kv_heads, int max_keys, int max_blocks, int sm_count) {
    // Aim at about this many blocks per multiprocessor; a step with fewer than half as many is
    // split, into shares of at least two tiles, at most attention_max_splits, within the
    // workspace.
    constexpr int target_blocks_per_sm = 4;
    constexpr int min_share_keys =
        2 * shape<64>::keys; // two tiles (the tile is the same for every HD)
    const int blocks = items * n_kv_heads;
    const int target = target_blocks_per_sm * sm_count;
    if (blocks <= 0 || 2 * blocks >= target || max_keys <= min_share_keys)
        return 1;
    int splits = (target + blocks - 1) / blocks;
    splits = std::min({splits, (max_keys + min_share_keys - 1) / min_share_keys,
                       attention_max_splits, max_blocks / blocks});
    return std::max(splits, 1);
}

std::size_t attention_output_floats(int head_dim, int max_blocks) {
    return static_cast<std::size_t>(std::max(max_blocks, 0)) *
           static_cast<std::size_t>(rows_for(head_dim)) * static_cast<std::size_t>(head_dim);
}

std::size_t attention_workspace_floats(int head_dim, int max_blocks) {
    return attention_output_floats(head_dim, max_blocks) +
           static_cast<std::size_t>(std::max(max_blocks, 0)) *
               static_cast<std::size_t>(rows_for(head_dim)) * 2;
}

bool attention_supports(int head_dim, int group) {
    return group >= 1 && group <= rows_for(head_dim);
}

int attention_queries_per_item(int head_dim, int group) {
    return rows_for(head_dim) / group;
}

void paged_attention(const float* qkv, const std::int32_t* pos, const attention_items& items,
                     int n_items, const void* kv_cache, dtype type, const kv_geometry& g, int layer,
                     void* out, const attention_split& split, cudaStream_t stream) {
    if (n_items <= 0)
        return;
    switch (g.head_dim) {
    case 16:
        return launch<16>(qkv, pos, items, n_items, kv_cache, type, g, layer, out, split, stream);
    case 32:
        return launch<32>(qkv, pos, items, n_items, kv_cache, type, g, layer, out, split, stream);
    case 64:
        return launch<64>(qkv, pos, items, n_items, kv_cache, type, g, layer, out, split, stream);
    case 128:
        return launch<128>(qkv, pos, items, n_items, kv_cache, type, g, layer, out, split, stream);
    default:
        return; // refused at construction (attention_supports)
    }
}

} // namespace lanes::replica::cuda
