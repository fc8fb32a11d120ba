#include "replica/config.hpp"

#include "common/http/server_flags.hpp"

#include <algorithm>

namespace lanes::replica {

namespace {

// The values of the flags that take one of a set: --help lists them, validate() checks them.
const std::vector<std::string> backend_names = {"auto", "cuda", "cpu", "sim"};
const std::vector<std::string> preset_names = {"tiny", "small", "base", "1b"};
const std::vector<std::string> cuda_dtypes = {"bf16", "fp32"};
const std::vector<std::string> log_levels = {"debug", "info", "warn", "error"};

bool one_of(const std::vector<std::string>& names, const std::string& value) {
    return std::find(names.begin(), names.end(), value) != names.end();
}

// "a, b or c"
std::string listed(const std::vector<std::string>& names) {
    std::string out;
    for (std::size_t i = 0; i < names.size(); ++i)
        out += (i == 0 ? "" : i + 1 == names.size() ? " or " : ", ") + names[i];
    return out;
}

} // namespace

void add_sim_cost_flags(common::flag_set& f, sim_cost_model& m) {
    f.add("sim-prefill-a", m.prefill_a, "sim: ms per squared uncached prompt token");
    f.add("sim-prefill-b", m.prefill_b, "sim: ms per uncached prompt token");
    f.add("sim-prefill-c", m.prefill_c, "sim: ms per prefill step");
    f.add("sim-decode-d", m.decode_d, "sim: decode ms, coefficient of p^2 (p = KV fill)");
    f.add("sim-decode-e", m.decode_e, "sim: decode ms, coefficient of p");
    f.add("sim-decode-f", m.decode_f, "sim: decode ms per step at empty KV");
    f.add("sim-speedup", m.speedup, "sim: divide every modelled time by this");
}

bool replica_config::serves(std::string_view name) const {
    return name == model_name || std::find(served_model_names.begin(), served_model_names.end(),
                                           name) != served_model_names.end();
}

void resolve_model_names(replica_config& cfg) {
    if (!cfg.served_model_names.empty())
        cfg.model_name = cfg.served_model_names.front();
    else if (!cfg.model.empty())
        cfg.model_name = cfg.model;
}

void add_engine_flags(common::flag_set& f, replica_config& cfg) {
    f.section("Model and backend");
    f.add("backend", cfg.backend, "model backend (auto: cuda when a GPU is usable, else cpu)")
        .value_name("NAME")
        .choices(backend_names);
    f.add("preset", cfg.preset, "model size").value_name("NAME").choices(preset_names);
    f.add("model", cfg.model,
          "a Hugging Face model directory (config.json, safetensors weights, tokenizer files) "
          "for Llama 3.x, Qwen2/2.5, Qwen3 or Mistral (empty: the seeded --preset)")
        .value_name("DIR");
    f.add("seed", cfg.seed, "seed for the weights (a request without a seed gets a fresh one)")
        .value_name("NUMBER");
    f.add("cuda-dtype", cfg.cuda_dtype, "cuda: weight and KV storage")
        .value_name("NAME")
        .choices(cuda_dtypes);
    f.add("cuda-graphs", cfg.cuda_graphs, "cuda: replay decode steps from CUDA graphs");
    f.add("cpu-threads", cfg.cpu_threads, "OpenBLAS threads for the cpu backend");

    f.section("KV cache");
    f.add("kv-blocks", cfg.kv_blocks, "number of KV cache blocks (0: from --kv-cache-mb)");
    f.add("kv-cache-mb", cfg.kv_cache_mb, "KV cache budget when --kv-blocks is 0")
        .value_name("MIB");
    f.add("kv-cache-memory-bytes", cfg.kv_cache_memory_bytes,
          "KV cache size in bytes, as vLLM's flag (0: --kv-cache-mb, or on cuda "
          "--gpu-memory-utilization)")
        .value_name("BYTES");
    f.add("gpu-memory-utilization", cfg.gpu_memory_utilization,
          "cuda: share of the whole device memory this server may use, as vLLM; the KV cache "
          "gets what other processes, the weights and step buffers leave of it");
    f.add("max-auto-kv-blocks", cfg.max_auto_kv_blocks,
          "cap on blocks derived from --kv-cache-mb or --gpu-memory-utilization");
    f.add("block-size", cfg.block_size, "tokens per KV cache block").value_name("TOKENS");

    f.section("Scheduler");
    f.add("max-model-len", cfg.max_model_len, "longest prompt + output").value_name("TOKENS");
    f.add("max-num-seqs", cfg.max_num_seqs, "most requests running in one step");
    f.add("max-num-batched-tokens", cfg.max_num_batched_tokens, "most tokens computed per step")
        .value_name("TOKENS");

    f.section("Simulated backend (--backend sim)");
    add_sim_cost_flags(f, cfg.sim);
}

common::flag_set make_flags(replica_config& cfg) {
    common::flag_set f("lanes-replica",
                       "A small OpenAI-compatible inference server with vLLM-compatible metrics.");
    f.section("Listening");
    f.add("host", cfg.host, "address to listen on").value_name("HOST");
    f.add("port", cfg.port, "port to listen on (0 picks a free port and logs it)");
    f.add("threads", cfg.threads, "HTTP I/O threads");
    f.section("Model and backend");
    f.add("served-model-name", cfg.served_model_names,
          "a name requests may use; the first is reported in responses and metrics (default: "
          "--model as given, else lanes-tiny)")
        .value_name("NAME");
    f.add("model-name", cfg.served_model_names, "the same as --served-model-name")
        .value_name("NAME");
    f.add("tokenizer", cfg.tokenizer,
          "a model's tokenizer directory (tokenizer.json, tokenizer_config.json): prompts, chats "
          "and outputs in its vocabulary, the model sized to it (empty: the byte vocabulary)")
        .value_name("DIR");
    f.add("tokenizer-cache-tokens", cfg.tokenizer_cache_tokens,
          "token ids of encoded text runs kept for reuse (0: none)");
    add_engine_flags(f, cfg);
    f.section("Scheduler");
    f.add("max-waiting", cfg.max_waiting, "most queued requests; more are refused with 503");
    f.add("default-max-tokens", cfg.default_max_tokens,
          "max_tokens of chat requests that do not set it, within the context; 0: the rest of "
          "the context, as vLLM (completions default to 16, as OpenAI)");
    f.section("Request limits");
    f.add("json-max-depth", cfg.request_limits.max_depth,
          "deepest nesting of arrays and objects in a request body");
    f.add("json-max-values", cfg.request_limits.max_values,
          "most JSON values (arrays, objects, their elements) in a request body");
    f.add("max-stop-strings", cfg.request_limits.max_stop_strings,
          "most stop strings in one request (0: no cap; OpenAI allows 4)");
    f.add("max-stop-bytes", cfg.request_limits.max_stop_bytes, "longest stop string")
        .value_name("BYTES");
    f.add("max-logprobs", cfg.request_limits.max_logprobs,
          "most alternatives per token a request may ask log-probabilities of (-1: no cap)");
    f.section("KV events");
    f.add("kv-events-endpoint", cfg.kv_events.endpoint,
          "publish KV-cache events (vLLM's format) on a ZeroMQ PUB socket bound here, e.g. "
          "tcp://127.0.0.1:5557 (a port of * picks one and logs it); off when empty")
        .value_name("ENDPOINT");
    f.add("kv-events-replay-endpoint", cfg.kv_events.replay_endpoint,
          "ZeroMQ ROUTER socket bound here answering replay requests (vLLM's); none when empty")
        .value_name("ENDPOINT");
    f.add("kv-events-topic", cfg.kv_events.topic, "topic frame of every published batch");
    f.add("kv-events-buffer-steps", cfg.kv_events.buffer_steps, "batches kept for replay requests");
    f.add("kv-events-queue", cfg.kv_events.max_queue,
          "batches waiting to be sent; past it a batch is dropped (and counted)");
    f.add("kv-dump-token", cfg.kv_dump_token,
          "bearer token GET /kv-events/blocks (the cached blocks, for routers warming up) "
          "requires; the dump is off without one")
        .value_name("TOKEN");
    f.add("kv-dump-token-file", cfg.kv_dump_token_file,
          "file whose first line is the --kv-dump-token")
        .value_name("PATH");
    f.add("kv-dump-timeout", cfg.kv_dump_timeout,
          "how long a dump request waits for the engine's pause between steps");
    common::http::add_server_flags(f, cfg.http,
                                   {.listening = "Listening", .limits = "Request limits"});
    f.section("Observability");
    f.add("log-level", cfg.log_level, "least severe level logged")
        .value_name("LEVEL")
        .choices(log_levels);
    f.add("log-queue-bytes", cfg.log_queue_bytes,
          "log lines held for the log's writer thread (past it lines are dropped and counted)")
        .value_name("BYTES");
    return f;
}

std::vector<std::string> validate(const replica_config& cfg) {
    std::vector<std::string> errors;
    auto need = [&](bool ok, std::string message) {
        if (!ok)
            errors.push_back(std::move(message));
    };
    need(one_of(backend_names, cfg.backend),
         "--backend must be " + listed(backend_names) + " (got '" + cfg.backend + "')");
    need(one_of(preset_names, cfg.preset),
         "--preset must be " + listed(preset_names) + " (got '" + cfg.preset + "')");
    for (const auto& name : cfg.served_model_names)
        need(!name.empty(), "--served-model-name must not be empty");
    need(cfg.block_size >= 1 && cfg.block_size <= 256, "--block-size must be in 1..256");
    need(cfg.kv_blocks == 0 || cfg.kv_blocks >= 2, "--kv-blocks must be 0 (auto) or at least 2");
    need(cfg.kv_cache_mb >= 1, "--kv-cache-mb must be at least 1");
    need(cfg.max_auto_kv_blocks >= 16, "--max-auto-kv-blocks must be at least 16");
    need(cfg.gpu_memory_utilization > 0 && cfg.gpu_memory_utilization <= 1,
         "--gpu-memory-utilization must be in (0, 1]");
    need(one_of(cuda_dtypes, cfg.cuda_dtype),
         "--cuda-dtype must be " + listed(cuda_dtypes) + " (got '" + cfg.cuda_dtype + "')");
    need(cfg.cpu_threads >= 1 && cfg.cpu_threads <= 256, "--cpu-threads must be in 1..256");
    need(cfg.sim.speedup > 0, "--sim-speedup must be positive");
    need(cfg.max_model_len >= 2, "--max-model-len must be at least 2");
    need(cfg.max_num_seqs >= 1, "--max-num-seqs must be at least 1");
    need(cfg.max_num_batched_tokens >= 1, "--max-num-batched-tokens must be at least 1");
    need(cfg.max_waiting >= 1, "--max-waiting must be at least 1");
    need(cfg.default_max_tokens >= 0, "--default-max-tokens must be >= 0");
    need(cfg.threads >= 1 && cfg.threads <= 256, "--threads must be in 1..256");
    need(cfg.request_limits.max_depth >= 2 && cfg.request_limits.max_depth <= 1024,
         "--json-max-depth must be in 2..1024");
    need(cfg.request_limits.max_values >= 16, "--json-max-values must be at least 16");
    need(cfg.request_limits.max_stop_bytes >= 1, "--max-stop-bytes must be at least 1");
    need(cfg.request_limits.max_logprobs >= -1, "--max-logprobs must be -1 (no cap) or at least 0");
    common::http::check_server_config(cfg.http, errors);
    need(one_of(log_levels, cfg.log_level), "--log-level must be " + listed(log_levels));
    need(cfg.log_queue_bytes >= 4096, "--log-queue-bytes must be at least 4096");
    need(cfg.kv_events.endpoint.empty() || cfg.kv_events.endpoint.starts_with("tcp://") ||
             cfg.kv_events.endpoint.starts_with("ipc://"),
         "--kv-events-endpoint must be tcp://host:port or ipc://path");
    need(cfg.kv_events.replay_endpoint.empty() || !cfg.kv_events.endpoint.empty(),
         "--kv-events-replay-endpoint needs --kv-events-endpoint");
    need(cfg.kv_events.buffer_steps >= 1, "--kv-events-buffer-steps must be at least 1");
    need(cfg.kv_events.max_queue >= 1, "--kv-events-queue must be at least 1");
    need(cfg.kv_dump_token.empty() || cfg.kv_dump_token_file.empty(),
         "give --kv-dump-token or --kv-dump-token-file, not both");
    need((cfg.kv_dump_token.empty() && cfg.kv_dump_token_file.empty()) ||
             !cfg.kv_events.endpoint.empty(),
         "--kv-dump-token needs --kv-events-endpoint (the dump goes with the event stream)");
    need(cfg.kv_dump_timeout.count() >= 1, "--kv-dump-timeout must be positive");
    return errors;
}

} // namespace lanes::replica
