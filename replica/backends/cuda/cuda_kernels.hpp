// The CUDA backend's own kernels, behind plain launch functions so the host side
// (cuda_backend.cpp) is ordinary C++20 and only the .cu files need nvcc. Every launch is
// asynchronous on the given stream and capturable into a CUDA graph: no allocation, no
// synchronisation, and every per-step input is read from device memory.
//
// Row-major everywhere; "rows" are the batch's tokens. Buffers typed `void*` hold the storage
// dtype (fp32 or bf16); fp32 buffers are typed `float*`. Metadata arrays are int32.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>
#include <cstdint>

namespace lanes::replica::cuda {

enum class dtype { f32, bf16 };

// The KV cache's geometry: [block][layer][k|v][slot][kv_dim], kv_dim = n_kv_heads * head_dim.
struct kv_geometry {
    int n_layers = 0;
    int n_heads = 0;
    int n_kv_heads = 0;
    int head_dim = 0;
    int block_size = 0;
};

// dst[i] = bf16(src[i]), round to nearest even.
void convert_to_bf16(const float* src, void* dst, std::size_t n, cudaStream_t stream);

// x[r] = embedding[min(tokens[r], vocab - 1)] for r < rows (d floats per row).
void embed(const float* embedding, const std::int32_t* tokens, float* x, int rows, int d, int vocab,
           cudaStream_t stream);

// out[r] = x[src] / rms(x[src]) * gain with src = row_index ? row_index[r] : r, in `out_type`.
void rms_norm(const float* x, const std::int32_t* row_index, const float* gain, void* out,
              dtype out_type, int rows, int d, float eps, cudaStream_t stream);

// For each row of qkv ([rows][q_dim + 2 kv_dim], fp32), each head of q, k and v: `bias` (q|k|v,
// Qwen2) added when not null, then each q head RMS-normed with `q_norm` and each k head with
// `k_norm` (Qwen3, head_dim gains) when not null. One thread per head: a step's rows are few.
void qkv_bias_norm(float* qkv, const float* bias, const float* q_norm, const float* k_norm,
                   const kv_geometry& g, float eps, int rows, cudaStream_t stream);

// For each row of qkv ([rows][q_dim + 2 kv_dim], fp32): rotary embedding (rotate-half, angle
// pos[r] * inv_freq[i], the model's table of head_dim / 2 frequencies) of q in place and of k;
// then k and v are stored in the cache at slot[r] (block * block_size + offset); rows with
// slot < 0 (padding) store nothing.
void rope_store_kv(float* qkv, const std::int32_t* pos, const std::int32_t* slot, void* kv_cache,
                   dtype kv_type, const kv_geometry& g, int layer, const float* inv_freq, int rows,
                   cudaStream_t stream);

// How the attention kernel's work is cut: an item is up to `attention_queries_per_item` query
// tokens of one sequence (consecutive rows), attended for every KV head by one thread block.
struct attention_items {
    const std::int32_t* first_row = nullptr;    // [items] first query row
    const std::int32_t* count = nullptr;        // [items] query rows (0: padding, skipped)
    const std::int32_t* table_offset = nullptr; // [items] the sequence's block table in tables
    const std::int32_t* tables = nullptr;       // block tables, concatenated
};

// Query tokens per attention item for this shape (the host cuts prefill chunks with it).
int attention_queries_per_item(int head_dim, int group);
// Whether the attention kernel supports this shape: head_dim 16, 32, 64 or 128, and the query
// heads of one KV head (group) fitting one item.
bool attention_supports(int head_dim, int group);

// Splitting each item's keys over several blocks (see cuda_attention.cu): how many shares, and
// the workspace they write. splits 1 needs no workspace.
constexpr int attention_max_splits = 32;
// The workspace a backend keeps for split steps: this many blocks per multiprocessor.
constexpr int attention_blocks_per_sm = 8;
struct attention_split {
    int splits = 1;
    float* part_o = nullptr;  // [items][kv heads][splits][rows per item][head_dim]
    float* part_ml = nullptr; // [items][kv heads][splits][rows per item][2]: running max, sum
};
// Shares for a step of `items` items whose longest sequence sees `max_keys` keys (a decode graph,
// whose contexts grow after capture, passes a large value), with items x KV heads x shares kept
// within max_blocks (what the workspace holds).
int attention_splits(int items, int n_kv_heads, int max_keys, int max_blocks, int sm_count);
// fp32 values of part_o, and of part_o plus part_ml, for max_blocks blocks (items x KV heads x
// shares).
std::size_t attention_output_floats(int head_dim, int max_blocks);
std::size_t attention_workspace_floats(int head_dim, int max_blocks);

// Causal attention over the paged cache: each query row at pos[r] attends to keys 0..pos[r] of
// its sequence, read through the block table (cached prefix blocks and this step's own keys
// alike; the keys must be stored first). q is read from qkv, scaled by 1/sqrt(head_dim); the
// output [rows][q_dim] is written in `type`, the cache's dtype. Online softmax in fp32.
void paged_attention(const float* qkv, const std::int32_t* pos, const attention_items& items,
                     int n_items, const void* kv_cache, dtype type, const kv_geometry& g, int layer,
                     void* out, const attention_split& split, cudaStream_t stream);

// out[r][i] = silu(gate_up[r][i]) * gate_up[r][d_ff + i], in `out_type`.
void swiglu(const float* gate_up, void* out, dtype out_type, int rows, int d_ff,
            cudaStream_t stream);

} // namespace lanes::replica::cuda
