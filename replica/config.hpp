// lanes-replica's one config struct: every limit and timeout of the replica is a field here, set
// from flags (see make_flags) and validated in one place before anything starts.
#pragma once

#include "common/config_util.hpp"
#include "common/http/server.hpp"
#include "common/log.hpp"
#include "common/openai/request.hpp"
#include "replica/backends/sim_cost_model.hpp"
#include "replica/kv_events/publisher.hpp"

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::replica {

struct replica_config {
    std::string host = "127.0.0.1";
    unsigned short port = 8001;
    std::string backend = "auto"; // auto | cuda | cpu | sim
    std::string preset = "tiny";  // tiny | small | base | 1b
    // The name requests must use and responses and metrics report: the first served name.
    std::string model_name = "lanes-tiny";
    // --served-model-name (and its alias --model-name), as given; resolve_model_names fills
    // model_name from it (or from --model when empty).
    std::vector<std::string> served_model_names;
    // --model: a Hugging Face model directory (config.json, safetensors, tokenizer files);
    // empty: the seeded --preset.
    std::string model;
    std::string tokenizer; // a model's tokenizer directory; empty: the byte vocabulary
    std::size_t tokenizer_cache_tokens = std::size_t{1} << 22; // ids the segment cache holds
    std::size_t vocab_size = 0;            // set at start from `tokenizer` (0: the byte vocabulary)
    std::int64_t kv_blocks = 0;            // KV cache blocks in the pool; 0 = from kv_cache_mb
    std::int64_t kv_cache_mb = 256;        // KV memory budget when kv_blocks is 0 (fp32 K and V)
    std::size_t kv_cache_memory_bytes = 0; // KV bytes (any backend); 0: the budgets below
    std::int64_t max_auto_kv_blocks = 4096; // cap on the budget-derived block count
    // cuda, when kv_blocks and kv_cache_memory_bytes are 0: as vLLM, the fraction of the
    // device's whole memory this server may use; the KV cache gets what is left of it once other
    // processes, the weights and the step buffers are counted (capped by max_auto_kv_blocks).
    double gpu_memory_utilization = 0.9;
    std::string cuda_dtype = "bf16";            // cuda: weights and KV cache storage (bf16 | fp32)
    bool cuda_graphs = true;                    // cuda: replay decode steps from CUDA graphs
    std::int64_t block_size = 16;               // tokens per KV block
    std::int64_t seed = 0;                      // weights and default sampling seed
    std::int64_t max_model_len = 8192;          // prompt + output tokens
    std::int64_t max_num_seqs = 64;             // running requests per step
    std::int64_t max_num_batched_tokens = 2048; // tokens computed per step
    std::int64_t max_waiting = 1024;            // queued requests before 503
    std::int64_t default_max_tokens = 0; // chat without max_tokens; 0: the rest of the context
    std::string log_level = "info";
    std::size_t log_queue_bytes =
        common::log::default_queue_bytes; // log lines held for the writer thread
    common::http::server_config http;
    kv_events_config kv_events; // published when kv_events.endpoint is set
    // GET /kv-events/blocks (every cached block, for a router's warm-up) needs this bearer token;
    // off while empty. It reveals prompts: keep it secret.
    std::string kv_dump_token;
    std::string kv_dump_token_file;
    std::chrono::milliseconds kv_dump_timeout{2'000}; // the engine's answer to a dump request
    common::openai::request_limits request_limits;    // what one request body may ask
    std::int64_t threads = 1;     // HTTP I/O threads (the engine has its own thread)
    std::int64_t cpu_threads = 1; // OpenBLAS threads of the cpu backend
    sim_cost_model sim;

    // Whether a request's `model` names this server (any of its served names).
    bool serves(std::string_view name) const;
};

// model_name from --served-model-name / --model-name (the first given), else the --model
// argument as given (as vLLM), else the default.
void resolve_model_names(replica_config& cfg);

// Declares the sim backend's cost-model flags (--sim-prefill-a ... --sim-speedup) against `m`:
// the replica's and the offline simulator's.
void add_sim_cost_flags(common::flag_set& f, sim_cost_model& m);
// Declares the flags that configure the engine (backend, model, KV cache, scheduler limits)
// against the fields of `cfg`: the server's and the engine bench's.
void add_engine_flags(common::flag_set& f, replica_config& cfg);
// Declares every flag against the fields of `cfg`.
common::flag_set make_flags(replica_config& cfg);
// Every problem with a parsed config (empty when valid).
std::vector<std::string> validate(const replica_config& cfg);

} // namespace lanes::replica
