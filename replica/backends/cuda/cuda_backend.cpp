// The CUDA backend's host side: weights and KV cache in device memory, cuBLAS for the
// projections, the kernels of cuda_kernels.hpp for the rest, and CUDA graphs for decode.
//
// A step: the host packs the batch's metadata (token ids, positions, cache slots, attention
// items, block tables, rows wanting logits) into one pinned buffer, copies it to a device buffer
// of fixed address with one cudaMemcpyAsync, enqueues the forward pass on one stream, copies the
// logits back and synchronises. A decode step (every entry one token that wants logits, at most
// max_graph_batch entries) is padded to a power-of-two bucket and replays that bucket's graph:
// the first step of a bucket runs eagerly (cuBLAS and the kernels load), the second captures the
// graph, later ones replay it. Padding rows carry slot -1 (nothing stored) and empty attention
// items, so they touch no sequence's state. Growing a buffer (a step larger than any before)
// drops the graphs, whose kernels point into the old buffers.
#include "replica/backends/cuda/cuda_backend.hpp"

#include "common/log.hpp"
#include "replica/backends/cuda/cuda_kernels.hpp"
#include "replica/backends/cuda/cuda_memory.hpp"
#include "replica/backends/cuda/cuda_profile.hpp"
#include "replica/backends/cuda/cuda_weights.hpp"
#include "replica/backends/cuda/step_layout.hpp"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <limits>
#include <memory>
#include <stdexcept>
#include <type_traits>
#include <utility>

namespace lanes::replica {

namespace {

// cuBLAS workspace, set explicitly so graph capture never allocates (32 MiB: NVIDIA's advice
// for Hopper).
constexpr std::size_t cublas_workspace_bytes = std::size_t{32} << 20;
// Device memory left for the CUDA context, cuBLAS's own state and graph executables.
constexpr std::size_t context_margin_bytes = std::size_t{512} << 20;

int as_int(std::size_t v) {
    return static_cast<int>(v);
}

class cuda_backend final : public backend {
public:
    cuda_backend(const backend_options& options, const model_weights& weights);
    ~cuda_backend() override;
    cuda_backend(const cuda_backend&) = delete;
    cuda_backend& operator=(const cuda_backend&) = delete;

    std::string_view name() const override { return "cuda"; }
    std::string describe() const override {
        return std::string("cuda (") + (dtype_ == cuda::dtype::f32 ? "fp32" : "bf16") +
               ", CUDA graphs " + (use_graphs_ ? "on" : "off") + ")";
    }
    bool forward(std::span<const batch_entry> batch,
                 std::vector<std::vector<float>>& logits) override;

private:
    // One step's shape, as enqueue() needs it.
    struct step {
        int rows = 0;       // token rows computed (a decode bucket includes its padding)
        int items = 0;      // attention items
        int logit_rows = 0; // rows through the LM head
        int copy_rows = 0;  // logits rows copied back (the entries that want them)
        std::size_t meta_ints = 0;
        bool decode = false;
        std::size_t bucket = 0; // graph bucket index when decode
        int splits = 1;         // shares of each attention item's keys
    };

    void reserve(std::size_t rows, std::size_t table_entries, std::size_t logit_rows);
    step pack(std::span<const batch_entry> batch);
    void enqueue(const step& s);
    void gemm(const void* x, const void* w, float* y, int rows, int in, int out, float beta);
    void replay_decode(const step& s);
    void drop_graphs();

    model_config cfg_;
    cuda::dtype dtype_;
    cudaDataType_t gemm_type_;
    std::size_t value_bytes_;
    std::size_t block_size_;
    std::size_t num_blocks_;
    bool use_graphs_;
    int sm_count_ = 1;
    int queries_per_item_;
    cuda::kv_geometry geometry_;
    // Declared so that the handle goes before its workspace, and the stream last.
    stream_ptr stream_owner_;
    cudaStream_t stream_ = nullptr;
    device_memory workspace_;
    cublas_ptr cublas_owner_;
    cublasHandle_t cublas_ = nullptr;
    device_weights weights_;
    device_memory kv_;

    // Step buffers for rows_cap_ token rows and table_cap_ block-table entries; logits for
    // logit_cap_ rows (a row per sequence, or a decode bucket's rows), not per token: at a
    // 150k-id vocabulary a row is 0.6 MB.
    std::size_t rows_cap_ = 0, table_cap_ = 0, logit_cap_ = 0;
    pinned_memory meta_host_;
    device_memory meta_;
    device_memory x_, h_, qkv_, att_, gate_up_, act_, logits_;
    pinned_memory logits_host_;
    // Split attention's workspace, for up to attention_blocks_ blocks (items x KV heads x shares).
    int attention_blocks_ = 0;
    device_memory attention_ws_;
    cuda::step_profile profile_;

    std::array<cudaGraphExec_t, graph_buckets> graphs_{};
    std::array<bool, graph_buckets> warmed_{};
};

cuda_backend::cuda_backend(const backend_options& options, const model_weights& weights)
    : cfg_(weights.cfg)
    , dtype_(options.cuda_dtype == "fp32" ? cuda::dtype::f32 : cuda::dtype::bf16)
    , gemm_type_(dtype_ == cuda::dtype::f32 ? CUDA_R_32F : CUDA_R_16BF)
    , value_bytes_(cuda_dtype_bytes(options.cuda_dtype))
    , block_size_(options.block_size)
    , num_blocks_(options.num_blocks)
    , use_graphs_(options.cuda_graphs)
    , queries_per_item_(cuda::attention_queries_per_item(as_int(cfg_.head_dim),
                                                         as_int(cfg_.n_heads / cfg_.n_kv_heads))) {
    geometry_.n_layers = as_int(cfg_.n_layers);
    geometry_.n_heads = as_int(cfg_.n_heads);
    geometry_.n_kv_heads = as_int(cfg_.n_kv_heads);
    geometry_.head_dim = as_int(cfg_.head_dim);
    geometry_.block_size = as_int(block_size_);
    check(cudaSetDevice(0), "cudaSetDevice");
    check(cudaDeviceGetAttribute(&sm_count_, cudaDevAttrMultiProcessorCount, 0),
          "reading the multiprocessor count");
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    stream_owner_.reset(stream_);
    workspace_ = device_memory(cublas_workspace_bytes);
    check(cublasCreate(&cublas_), "cublasCreate");
    cublas_owner_.reset(cublas_);
    // cublasSetStream resets the workspace, so the workspace comes second.
    check(cublasSetStream(cublas_, stream_), "cublasSetStream");
    check(cublasSetWorkspace(cublas_, workspace_.get(), workspace_.size()), "cublasSetWorkspace");
    check(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH), "cublasSetMathMode"); // no TF32

    weights_ = device_weights(weights, dtype_, stream_);

    kv_ = device_memory(num_blocks_ * cuda_kv_block_bytes(cfg_, block_size_, value_bytes_));
    check(cudaMemsetAsync(kv_.get(), 0, kv_.size(), stream_), "cudaMemset");
    reserve(std::max(options.max_batched_tokens, max_graph_batch),
            std::max<std::size_t>(num_blocks_, 1024),
            std::max(options.max_num_seqs, max_graph_batch));
    attention_blocks_ = cuda::attention_blocks_per_sm * sm_count_;
    attention_ws_ = device_memory(
        cuda::attention_workspace_floats(geometry_.head_dim, attention_blocks_) * sizeof(float));
    check(cudaStreamSynchronize(stream_), "allocating the KV cache");
}

cuda_backend::~cuda_backend() {
    if (stream_)
        cudaStreamSynchronize(stream_);
    drop_graphs();
    profile_.report();
}

void cuda_backend::drop_graphs() {
    for (auto& g : graphs_) {
        if (g)
            cudaGraphExecDestroy(g);
        g = nullptr;
    }
    warmed_.fill(false);
}

void cuda_backend::reserve(std::size_t rows, std::size_t table_entries, std::size_t logit_rows) {
    if (rows <= rows_cap_ && table_entries <= table_cap_ && logit_rows <= logit_cap_)
        return;
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
    drop_graphs();
    rows_cap_ = std::max(rows, rows_cap_);
    table_cap_ = std::max(table_entries, 2 * table_cap_);
    const std::size_t meta_bytes = (meta_arrays * rows_cap_ + table_cap_) * sizeof(std::int32_t);
    meta_host_ = pinned_memory(meta_bytes);
    meta_ = device_memory(meta_bytes);
    const auto& c = cfg_;
    auto take = [&](device_memory& m, std::size_t values_per_row, std::size_t bytes_per_value) {
        m = device_memory(rows_cap_ * values_per_row * bytes_per_value);
        check(cudaMemsetAsync(m.get(), 0, m.size(), stream_), "cudaMemset");
    };
    take(x_, c.d_model, sizeof(float));
    take(h_, c.d_model, value_bytes_);
    take(qkv_, c.q_dim() + 2 * c.kv_dim(), sizeof(float));
    take(att_, c.q_dim(), value_bytes_);
    take(gate_up_, 2 * c.d_ff, sizeof(float));
    take(act_, c.d_ff, value_bytes_);
    if (logit_rows > logit_cap_) {
        logit_cap_ = logit_rows;
        logits_ = device_memory(logit_cap_ * c.vocab * sizeof(float));
        logits_host_ = pinned_memory(logit_cap_ * c.vocab * sizeof(float));
    }
}

// Fills meta_host_ for the batch (step_layout.hpp) and says how to run it.
cuda_backend::step cuda_backend::pack(std::span<const batch_entry> batch) {
    const step_shape shape = shape_step(batch, block_size_, num_blocks_, use_graphs_);
    reserve(shape.rows, shape.table_entries, shape.decode ? shape.rows : batch.size());
    const packed_step packed =
        pack_step(batch, shape, block_size_, static_cast<std::size_t>(queries_per_item_), rows_cap_,
                  meta_host_.get<std::int32_t>());
    step s;
    s.decode = shape.decode;
    s.bucket = shape.bucket;
    s.rows = as_int(shape.rows);
    s.items = as_int(packed.items);
    s.logit_rows = as_int(packed.logit_rows);
    s.copy_rows = as_int(packed.copy_rows);
    s.meta_ints = packed.meta_ints;
    // A decode graph replays while its sequences grow, so its split is chosen for any length.
    s.splits = cuda::attention_splits(s.items, geometry_.n_kv_heads,
                                      s.decode ? std::numeric_limits<int>::max() / 2
                                               : as_int(shape.max_keys),
                                      attention_blocks_, sm_count_);
    return s;
}

// y[rows x out] (fp32) = x[rows x in] · w[in x out] + beta · y, all row-major. cuBLAS is
// column-major, where these are yᵀ = wᵀ · xᵀ with no transposition: m = out, n = rows, k = in.
void cuda_backend::gemm(const void* x, const void* w, float* y, int rows, int in, int out,
                        float beta) {
    const float alpha = 1.0f;
    check(cublasGemmEx(cublas_, CUBLAS_OP_N, CUBLAS_OP_N, out, rows, in, &alpha, w, gemm_type_, out,
                       x, gemm_type_, in, &beta, y, CUDA_R_32F, out, CUBLAS_COMPUTE_32F,
                       CUBLAS_GEMM_DEFAULT),
          "cublasGemmEx");
}

// The forward pass of one step on stream_, reading the metadata already copied to meta_.
void cuda_backend::enqueue(const step& s) {
    const auto& c = cfg_;
    const std::size_t cap = rows_cap_;
    const std::int32_t* m = meta_.get<std::int32_t>();
    const std::int32_t *tokens = m, *pos = m + cap, *slot = m + 2 * cap;
    const cuda::attention_items items{m + 3 * cap, m + 4 * cap, m + 5 * cap, m + meta_arrays * cap};
    const std::int32_t* logit_row = m + 6 * cap;
    const int d = as_int(c.d_model), q_dim = as_int(c.q_dim());
    const int qkv_dim = as_int(c.q_dim() + 2 * c.kv_dim()), d_ff = as_int(c.d_ff);
    float* x = x_.get<float>();
    float* qkv = qkv_.get<float>();
    float* gate_up = gate_up_.get<float>();
    float* ws = attention_ws_.get<float>();
    const cuda::attention_split split{
        s.splits, ws, ws + cuda::attention_output_floats(geometry_.head_dim, attention_blocks_)};

    cuda::step_profile& p = profile_;
    cuda::embed(weights_.embedding, tokens, x, s.rows, d, as_int(c.vocab), stream_);
    p.mark("embed", stream_);
    for (std::size_t l = 0; l < weights_.layers.size(); ++l) {
        const device_weights::layer& w = weights_.layers[l];
        cuda::rms_norm(x, nullptr, w.attn_norm, h_.get(), dtype_, s.rows, d, c.rms_eps, stream_);
        p.mark("norm", stream_);
        gemm(h_.get(), w.wqkv, qkv, s.rows, d, qkv_dim, 0.0f);
        p.mark("gemm qkv", stream_);
        cuda::qkv_bias_norm(qkv, w.qkv_bias, w.q_norm, w.k_norm, geometry_, c.rms_eps, s.rows,
                            stream_);
        cuda::rope_store_kv(qkv, pos, slot, kv_.get(), dtype_, geometry_, as_int(l),
                            weights_.rope_inv_freq, s.rows, stream_);
        p.mark("rope+store", stream_);
        cuda::paged_attention(qkv, pos, items, s.items, kv_.get(), dtype_, geometry_, as_int(l),
                              att_.get(), split, stream_);
        p.mark("attention", stream_);
        gemm(att_.get(), w.wo, x, s.rows, q_dim, d, 1.0f); // beta 1: the residual add
        p.mark("gemm o", stream_);
        cuda::rms_norm(x, nullptr, w.mlp_norm, h_.get(), dtype_, s.rows, d, c.rms_eps, stream_);
        p.mark("norm", stream_);
        gemm(h_.get(), w.w_gate_up, gate_up, s.rows, d, 2 * d_ff, 0.0f);
        p.mark("gemm gate_up", stream_);
        cuda::swiglu(gate_up, act_.get(), dtype_, s.rows, d_ff, stream_);
        p.mark("swiglu", stream_);
        gemm(act_.get(), w.w_down, x, s.rows, d_ff, d, 1.0f);
        p.mark("gemm down", stream_);
    }
    cuda::rms_norm(x, logit_row, weights_.final_norm, h_.get(), dtype_, s.logit_rows, d, c.rms_eps,
                   stream_);
    p.mark("norm", stream_);
    if (s.logit_rows > 0)
        gemm(h_.get(), weights_.lm_head, logits_.get<float>(), s.logit_rows, d, as_int(c.vocab),
             0.0f);
    p.mark("gemm lm_head", stream_);
    check(cudaGetLastError(), "launching the forward pass");
}

// Runs a decode step through its bucket's graph: eager the first time, captured the second.
void cuda_backend::replay_decode(const step& s) {
    cudaGraphExec_t& exec = graphs_[s.bucket];
    if (!exec && !warmed_[s.bucket]) {
        enqueue(s);
        warmed_[s.bucket] = true;
        return;
    }
    if (!exec) {
        check(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal),
              "cudaStreamBeginCapture");
        std::string failure;
        profile_.set_capturing(true);
        try {
            enqueue(s);
        } catch (const std::exception& e) {
            failure = e.what();
        }
        profile_.set_capturing(false);
        cudaGraph_t graph = nullptr;
        cudaError_t status = cudaStreamEndCapture(stream_, &graph);
        if (status == cudaSuccess && failure.empty())
            status = cudaGraphInstantiate(&exec, graph, 0);
        if (graph)
            cudaGraphDestroy(graph);
        if (failure.empty() && status != cudaSuccess)
            failure = std::string("capturing the decode graph: ") + cudaGetErrorString(status);
        if (!failure.empty()) {
            // Nothing of the failed capture ran: say so once, then run this step and every later
            // one eagerly (an error that is not the capture's shows again in the eager pass).
            (void)cudaGetLastError();
            exec = nullptr;
            use_graphs_ = false;
            LANES_LOG(error, "cuda",
                      "CUDA graph capture failed (" << failure
                                                    << "); decode steps run without graphs");
            enqueue(s);
            return;
        }
    }
    check(cudaGraphLaunch(exec, stream_), "cudaGraphLaunch");
}

bool cuda_backend::forward(std::span<const batch_entry> batch,
                           std::vector<std::vector<float>>& logits) {
    std::size_t total = 0;
    for (const auto& e : batch)
        total += e.tokens.size();
    if (total == 0)
        return true;
    check(cudaSetDevice(0), "cudaSetDevice"); // the engine thread is not the constructing one
    profile_.begin_step(stream_);
    const step s = pack(batch);
    check(cudaMemcpyAsync(meta_.get(), meta_host_.get(), s.meta_ints * sizeof(std::int32_t),
                          cudaMemcpyHostToDevice, stream_),
          "copying step metadata");
    profile_.mark("metadata copy", stream_);
    const bool replayed = s.decode && graphs_[s.bucket] != nullptr;
    if (s.decode)
        replay_decode(s);
    else
        enqueue(s);
    profile_.mark("forward", stream_); // a graph replay's whole time; ~0 after an eager pass
    const std::size_t vocab = cfg_.vocab;
    check(cudaMemcpyAsync(logits_host_.get(), logits_.get(),
                          static_cast<std::size_t>(s.copy_rows) * vocab * sizeof(float),
                          cudaMemcpyDeviceToHost, stream_),
          "copying logits");
    profile_.mark("logits copy", stream_);
    check(cudaStreamSynchronize(stream_), "running the forward pass");
    profile_.end_step(replayed ? "graph" : (s.decode ? "decode eager" : "eager"), s.rows);
    const float* host = logits_host_.get<float>();
    for (int r = 0; r < s.copy_rows; ++r)
        logits.emplace_back(host + static_cast<std::size_t>(r) * vocab,
                            host + static_cast<std::size_t>(r + 1) * vocab);
    return true;
}

} // namespace

std::size_t cuda_reserve_bytes(const model_config& c, std::size_t max_tokens,
                               std::size_t max_seqs) {
    const std::size_t rows = std::max(max_tokens, max_graph_batch);
    const std::size_t floats_per_row =
        2 * c.d_model + c.q_dim() + 2 * c.kv_dim() + c.q_dim() + 3 * c.d_ff;
    const std::size_t logit_rows = std::max(max_seqs, max_graph_batch);
    return rows * (floats_per_row * sizeof(float) + meta_arrays * sizeof(std::int32_t)) +
           logit_rows * c.vocab * sizeof(float) + cublas_workspace_bytes + context_margin_bytes;
}

std::unique_ptr<backend> make_cuda_backend(const backend_options& options,
                                           const model_weights& weights, std::string& error) {
    const auto& c = weights.cfg;
    if (cuda_dtype_bytes(options.cuda_dtype) == 0) {
        error =
            "--backend cuda: --cuda-dtype must be bf16 or fp32 (got '" + options.cuda_dtype + "')";
        return nullptr;
    }
    if (c.n_kv_heads == 0 || c.n_heads % c.n_kv_heads != 0 || c.head_dim % 2 != 0 ||
        !cuda::attention_supports(static_cast<int>(c.head_dim),
                                  static_cast<int>(c.n_heads / c.n_kv_heads))) {
        error = "--backend cuda: unsupported attention shape (head_dim " +
                std::to_string(c.head_dim) + ", " + std::to_string(c.n_heads) + " heads, " +
                std::to_string(c.n_kv_heads) + " KV heads)";
        return nullptr;
    }
    if (options.num_blocks * options.block_size >
        static_cast<std::size_t>(std::numeric_limits<std::int32_t>::max())) {
        error = "--backend cuda: the KV pool holds more token slots than int32 cache slots address";
        return nullptr;
    }
    try {
        return std::make_unique<cuda_backend>(options, weights);
    } catch (const std::exception& e) {
        error = std::string("--backend cuda: ") + e.what();
        return nullptr;
    }
}

} // namespace lanes::replica
