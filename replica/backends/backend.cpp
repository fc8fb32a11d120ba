#include "replica/backends/backend.hpp"

#include "replica/backends/cpu_backend.hpp"
#include "replica/backends/sim_backend.hpp"
#include "replica/config.hpp"
#include "replica/models/checkpoint.hpp"

#if LANES_HAVE_CUDA
#include "replica/backends/cuda/cuda_backend.hpp"
#include "replica/backends/cuda/cuda_probe.hpp"
#endif

#include "common/log.hpp"

#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>

namespace lanes::replica {

std::string_view to_string(backend_kind kind) {
    switch (kind) {
    case backend_kind::cpu:
        return "cpu";
    case backend_kind::sim:
        return "sim";
    case backend_kind::cuda:
        return "cuda";
    }
    return "unknown";
}

std::optional<backend_kind> parse_backend_kind(std::string_view name) {
    for (const auto kind : {backend_kind::cpu, backend_kind::sim, backend_kind::cuda})
        if (to_string(kind) == name)
            return kind;
    return std::nullopt;
}

#if LANES_HAVE_CUDA
bool cuda_available(std::string* why) {
    return cuda_device_usable(why);
}
#else
bool cuda_available(std::string* why) {
    if (why)
        *why = "this build has no CUDA (LANES_CUDA was off or nvcc was not found)";
    return false;
}
#endif

std::unique_ptr<backend> make_backend(const backend_options& options, model_weights weights,
                                      std::string& error) {
    switch (options.kind) {
    case backend_kind::cpu:
        openblas_set_num_threads(static_cast<int>(options.cpu_threads));
        return std::make_unique<cpu_backend>(std::move(weights), options.num_blocks,
                                             options.block_size);
    case backend_kind::sim:
        return std::make_unique<sim_backend>(options.sim, options.num_blocks * options.block_size);
    case backend_kind::cuda: {
        std::string why;
        if (!cuda_available(&why)) {
            error = "--backend cuda: " + why;
            return nullptr;
        }
#if LANES_HAVE_CUDA
        return make_cuda_backend(options, weights, error);
#else
        return nullptr;
#endif
    }
    }
    error = "unknown backend";
    return nullptr;
}

backend_kind resolve_backend(std::string_view requested, std::string& note) {
    if (requested != "auto") {
        note.clear();
        return parse_backend_kind(requested).value_or(backend_kind::cpu);
    }
    std::string why;
    if (cuda_available(&why)) {
        note = "backend auto: using cuda (" + why + ")";
        return backend_kind::cuda;
    }
    note = "backend auto: using cpu (" + why + ")";
    return backend_kind::cpu;
}

std::size_t resolve_kv_blocks(const replica_config& cfg, const model_config& model,
                              backend_kind kind) {
    if (cfg.kv_blocks > 0)
        return static_cast<std::size_t>(cfg.kv_blocks);
    const auto block_size = static_cast<std::size_t>(cfg.block_size);
    const auto cap = static_cast<std::size_t>(cfg.max_auto_kv_blocks);
    // Bytes of one block as this backend stores it (the cpu backend keeps fp32 K and V).
    std::size_t per_block = model.kv_bytes_per_token(sizeof(float)) * block_size;
#if LANES_HAVE_CUDA
    if (kind == backend_kind::cuda)
        per_block = cuda_kv_block_bytes(model, block_size, cuda_dtype_bytes(cfg.cuda_dtype));
#else
    (void)kind;
#endif
    if (cfg.kv_cache_memory_bytes > 0) // as asked, uncapped (vLLM's --kv-cache-memory-bytes)
        return std::max<std::size_t>(cfg.kv_cache_memory_bytes / per_block, 2);
#if LANES_HAVE_CUDA
    std::size_t free_bytes = 0, total_bytes = 0;
    if (kind == backend_kind::cuda && cuda_memory(free_bytes, total_bytes, nullptr)) {
        // vLLM's meaning: this server may use the fraction of the device's whole memory; what
        // other processes hold now, the weights and the step buffers come out of it first.
        const std::size_t value_bytes = cuda_dtype_bytes(cfg.cuda_dtype);
        const double allowed = static_cast<double>(total_bytes) * cfg.gpu_memory_utilization;
        const double taken =
            static_cast<double>(total_bytes - free_bytes) +
            static_cast<double>(
                cuda_weight_bytes(model, value_bytes) +
                cuda_reserve_bytes(model, static_cast<std::size_t>(cfg.max_num_batched_tokens),
                                   static_cast<std::size_t>(cfg.max_num_seqs)));
        const double budget = allowed > taken ? allowed - taken : 0.0;
        return std::clamp<std::size_t>(static_cast<std::size_t>(budget) / per_block, 16, cap);
    }
#endif
    const std::size_t budget = static_cast<std::size_t>(cfg.kv_cache_mb) * 1024 * 1024;
    return std::clamp<std::size_t>(budget / per_block, 16, cap);
}

model_config replica_model(const replica_config& cfg) {
    if (!cfg.model.empty())
        return read_hf_config(cfg.model).cfg;
    auto model = preset(cfg.preset);
    if (!model)
        throw std::runtime_error("unknown preset " + cfg.preset);
    if (cfg.vocab_size > 0)
        model->vocab = cfg.vocab_size;
    return *model;
}

model_weights replica_weights(const replica_config& cfg) {
    if (cfg.model.empty())
        return make_weights(replica_model(cfg), static_cast<std::uint64_t>(cfg.seed));
    const auto start = std::chrono::steady_clock::now();
    loaded_checkpoint loaded = load_checkpoint(cfg.model);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    LANES_LOG(info, "engine",
              "weights of " << cfg.model << ": " << loaded.bytes / (1024 * 1024) << " MiB of "
                            << to_string(loaded.stored) << " in " << loaded.files
                            << " file(s), read as fp32 in " << seconds << " s");
    return std::move(loaded.weights);
}

std::unique_ptr<backend> build_backend(const replica_config& cfg, backend_kind kind) {
    // The sim backend computes nothing: no weights to read or make.
    return build_backend(cfg, kind,
                         kind == backend_kind::sim ? model_weights{} : replica_weights(cfg));
}

std::unique_ptr<backend> build_backend(const replica_config& cfg, backend_kind kind,
                                       model_weights weights) {
    backend_options options;
    options.kind = kind;
    options.num_blocks = static_cast<std::size_t>(cfg.kv_blocks);
    options.block_size = static_cast<std::size_t>(cfg.block_size);
    options.cpu_threads = cfg.cpu_threads;
    options.sim = cfg.sim;
    options.cuda_dtype = cfg.cuda_dtype;
    options.cuda_graphs = cfg.cuda_graphs;
    options.max_batched_tokens = static_cast<std::size_t>(cfg.max_num_batched_tokens);
    options.max_num_seqs = static_cast<std::size_t>(cfg.max_num_seqs);
    if (kind == backend_kind::sim)
        weights.cfg = replica_model(cfg);
    std::string error;
    auto b = make_backend(options, std::move(weights), error);
    if (!b)
        throw std::runtime_error(error);
    return b;
}

} // namespace lanes::replica
