// lanes-engine-bench: the replica engine in process, no HTTP. Measures decode throughput at given
// batch sizes and the time to first token of a long prompt with and without a cached prefix.
// Prints one JSON object (and writes it to --out when given).
//
// Decode: `tokens_per_s` is every generated token over the run's wall time; `decode_tokens_per_s`
// leaves out each request's first token and the time until the last first token (the prompts'
// prefill), so it is the steady decode rate. For cuda it is set against the HBM bound: a decode
// step must read the projection weights once plus every sequence's KV cache, so at B sequences
// with mean context L the bound is B / ((weight bytes + B * L * KV bytes per token) / bandwidth).
// Prefill: the uncached TTFT run's prompt tokens over its TTFT. The cpu backend's decode rows are
// set against the same bound with this machine's memory read bandwidth (measured here on one
// thread over 512 MiB, or --memory-gb-s). With --model the checkpoint is read once (its load time
// and the process's RSS after it are reported) and each run's engine gets a copy.
#include "common/config_util.hpp"
#include "common/log.hpp"
#include "replica/backends/cuda/cuda_backend.hpp"
#include "replica/engine/engine.hpp"

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace {

using namespace lanes;
using clock_type = std::chrono::steady_clock;

struct run_result {
    double wall_s = 0;
    double max_ttft_s = 0;
    std::int64_t tokens = 0;
    std::int64_t requests = 0;
};

// Runs the requests concurrently; returns wall time, the slowest TTFT and tokens generated.
run_result run(replica::engine& eng, const std::vector<replica::engine_request>& reqs) {
    boost::asio::io_context io;
    run_result out;
    const auto start = clock_type::now();
    for (const auto& r : reqs) {
        auto stream = std::make_shared<replica::request_stream>(io.get_executor());
        if (eng.submit(r, stream) != replica::submit_status::accepted)
            throw std::runtime_error("engine refused a request");
        boost::asio::co_spawn(
            io,
            [stream, &out, start]() -> boost::asio::awaitable<void> {
                bool first = true;
                for (;;) {
                    auto ev = co_await stream->next();
                    if (first && (!ev.text.empty() || ev.finished)) {
                        out.max_ttft_s = std::max(
                            out.max_ttft_s,
                            std::chrono::duration<double>(clock_type::now() - start).count());
                        first = false;
                    }
                    if (ev.finished) {
                        out.tokens += ev.completion_tokens;
                        ++out.requests;
                        co_return;
                    }
                }
            },
            boost::asio::detached);
    }
    io.run();
    out.wall_s = std::chrono::duration<double>(clock_type::now() - start).count();
    return out;
}

replica::engine_request request(const std::string& prompt, std::int64_t max_tokens) {
    replica::engine_request r;
    r.prompt = common::encode_prompt(prompt);
    r.sampling.max_tokens = max_tokens;
    r.sampling.temperature = 0.0;
    r.sampling.ignore_eos = true;
    return r;
}

std::string text(std::size_t n, char seed) {
    std::string s(n, ' ');
    for (std::size_t i = 0; i < n; ++i)
        s[i] = static_cast<char>('a' + (i * 7 + static_cast<std::size_t>(seed)) % 26);
    return s;
}

// `batch` short requests together on a fresh engine, so one-time costs (CUDA module loading,
// cuBLAS heuristics for these shapes, the capture of this batch's decode graph) stay out of what
// is measured. Their prompts are longer than the measured ones (so the step buffers do not grow
// later and drop the graph) and share no block with them.
// Each warm-up request decodes 4 tokens: its bucket's first decode step runs eagerly, the second
// is captured, the third replays.
constexpr std::size_t warm_up_prompt_len = 40, warm_up_prompt_margin = 8;
constexpr std::int64_t warm_up_tokens = 4;

void warm_up(replica::engine& eng, int batch = 1, std::size_t measured_prompt_len = 0) {
    const std::size_t len =
        std::max(warm_up_prompt_len, measured_prompt_len + warm_up_prompt_margin);
    std::vector<replica::engine_request> reqs;
    for (int i = 0; i < batch; ++i)
        reqs.push_back(request(text(len, 'w'), warm_up_tokens));
    run(eng, reqs);
}

struct bench_options {
    double memory_gb_s = 0; // cpu: the read bandwidth of the bound; 0 measures it
    std::string batches = "1,16";
    std::int64_t decode_tokens = 64, decode_prompt_len = 32, prompt_len = 2048, cached_len = 1920,
                 repeats = 3;
    double hbm_tb_s = 4.8;
    std::string out;
};

// The decode run at batch b: b requests together on a fresh (warmed-up) engine.
nlohmann::json decode_run(const replica::replica_config& cfg, const bench_options& o,
                          const replica::model_weights& weights, int b) {
    replica::replica_metrics m("bench", 16, static_cast<long>(cfg.kv_blocks));
    replica::engine eng(
        cfg, m, replica::build_backend(cfg, *replica::parse_backend_kind(cfg.backend), weights));
    eng.start();
    warm_up(eng, b, static_cast<std::size_t>(o.decode_prompt_len));
    std::vector<replica::engine_request> reqs;
    for (int i = 0; i < b; ++i)
        reqs.push_back(
            request(text(static_cast<std::size_t>(o.decode_prompt_len), static_cast<char>(i)),
                    o.decode_tokens));
    const auto r = run(eng, reqs);
    const double steady_s = r.wall_s - r.max_ttft_s;
    const double decode_rate =
        steady_s > 0 ? static_cast<double>(r.tokens - r.requests) / steady_s : 0.0;
    return {{"batch", b},
            {"tokens", r.tokens},
            {"wall_s", r.wall_s},
            {"tokens_per_s", static_cast<double>(r.tokens) / r.wall_s},
            {"decode_tokens_per_s", decode_rate}};
}

// Sets a decode row against the HBM bound of its batch.
void add_hbm_bound(nlohmann::json& row, const bench_options& o, std::size_t weight_bytes,
                   std::size_t kv_bytes_per_token) {
    const double b = row["batch"].get<double>();
    // Mean context over the steady decode: prompt (+ BOS) plus half the generation.
    const double context =
        static_cast<double>(o.decode_prompt_len + 1) + static_cast<double>(o.decode_tokens) / 2.0;
    const double step_bytes =
        static_cast<double>(weight_bytes) + b * context * static_cast<double>(kv_bytes_per_token);
    const double bound = b / (step_bytes / (o.hbm_tb_s * 1e12));
    row["step_bytes"] = step_bytes;
    row["bound_tokens_per_s"] = bound;
    row["fraction_of_bound"] = row["decode_tokens_per_s"].get<double>() / bound;
}

// TTFT of a long prompt on a fresh engine (uncached), then of a prompt sharing its first
// cached_len tokens; the median of `repeats` fresh engines each.
nlohmann::json ttft_runs(const replica::replica_config& cfg, const bench_options& o,
                         const replica::model_weights& weights) {
    std::vector<double> cold, warm;
    for (std::int64_t i = 0; i < o.repeats; ++i) {
        replica::replica_metrics m("bench", 16, static_cast<long>(cfg.kv_blocks));
        replica::engine eng(
            cfg, m,
            replica::build_backend(cfg, *replica::parse_backend_kind(cfg.backend), weights));
        eng.start();
        warm_up(eng);
        const std::string prefix = text(static_cast<std::size_t>(o.cached_len), 'p');
        const auto tail = static_cast<std::size_t>(o.prompt_len - o.cached_len - 1); // + BOS
        cold.push_back(run(eng, {request(prefix + text(tail, 'x'), 1)}).max_ttft_s);
        warm.push_back(run(eng, {request(prefix + text(tail, 'y'), 1)}).max_ttft_s);
    }
    std::sort(cold.begin(), cold.end());
    std::sort(warm.begin(), warm.end());
    const double cold_s = cold[cold.size() / 2], warm_s = warm[warm.size() / 2];
    return {
        {"prompt_tokens", o.prompt_len},
        {"cached_tokens", o.cached_len},
        {"cached_fraction", static_cast<double>(o.cached_len) / static_cast<double>(o.prompt_len)},
        {"uncached_s", cold_s},
        {"cached_s", warm_s},
        {"speedup", cold_s / warm_s},
        {"prefill_tokens_per_s", static_cast<double>(o.prompt_len) / cold_s}};
}

// Single-thread read bandwidth in GB/s: the best of 3 sums over 512 MiB of floats.
double measure_read_gb_s() {
    std::vector<float> data(std::size_t{128} << 20, 1.0f);
    double best = 0;
    volatile float sink = 0;
    for (int pass = 0; pass < 3; ++pass) {
        const auto start = clock_type::now();
        float acc[8] = {};
        for (std::size_t i = 0; i < data.size(); i += 8)
            for (int k = 0; k < 8; ++k)
                acc[k] += data[i + static_cast<std::size_t>(k)];
        const double s = std::chrono::duration<double>(clock_type::now() - start).count();
        sink = sink + acc[0] + acc[7];
        best = std::max(best, static_cast<double>(data.size() * sizeof(float)) / s / 1e9);
    }
    return best;
}

// The process's resident set (VmRSS) in MiB, from /proc/self/status.
double rss_mib() {
    std::ifstream status("/proc/self/status");
    for (std::string line; std::getline(status, line);)
        if (line.starts_with("VmRSS:"))
            return std::stod(line.substr(6)) / 1024.0;
    return 0;
}

int run_bench(replica::replica_config cfg, const bench_options& o) {
    const auto model = replica::replica_model(cfg);
    std::string note;
    const replica::backend_kind kind = replica::resolve_backend(cfg.backend, note);
    cfg.backend = std::string(replica::to_string(kind));
    cfg.kv_blocks = static_cast<std::int64_t>(replica::resolve_kv_blocks(cfg, model, kind));
    cfg.max_model_len = std::max<std::int64_t>(cfg.max_model_len, o.prompt_len + 16);

    // Bytes a decode step reads at minimum, in the backend's storage dtype.
    const bool cuda = kind == replica::backend_kind::cuda;
    const std::size_t value_bytes =
        cuda ? replica::cuda_dtype_bytes(cfg.cuda_dtype) : sizeof(float);
    const std::size_t weight_read = replica::cuda_projection_bytes(model, value_bytes);
    const std::size_t kv_per_token = model.kv_bytes_per_token(value_bytes);
    const auto load_start = clock_type::now();
    const replica::model_weights weights = replica::replica_weights(cfg);
    const double load_s = std::chrono::duration<double>(clock_type::now() - load_start).count();
    nlohmann::json report = {{"backend", cfg.backend},
                             {"preset", cfg.preset},
                             {"checkpoint", cfg.model},
                             {"load_s", load_s},
                             {"rss_mib_after_load", rss_mib()},
                             {"kv_blocks", cfg.kv_blocks},
                             {"cpu_threads", cfg.cpu_threads},
                             {"model",
                              {{"parameters", model.parameter_count()},
                               {"bytes_per_value", value_bytes},
                               {"projection_bytes", weight_read},
                               {"kv_bytes_per_token", kv_per_token}}}};
    bench_options bound = o; // the bandwidth the decode rows are set against
    if (cuda) {
        report["cuda_dtype"] = cfg.cuda_dtype;
        report["cuda_graphs"] = cfg.cuda_graphs;
        report["hbm_tb_s"] = o.hbm_tb_s;
    } else {
        const double gb_s = o.memory_gb_s > 0 ? o.memory_gb_s : measure_read_gb_s();
        report["memory_read_gb_s"] = gb_s;
        bound.hbm_tb_s = gb_s / 1000.0;
    }
    std::stringstream list(o.batches);
    for (std::string item; std::getline(list, item, ',');) {
        auto row = decode_run(cfg, o, weights, std::stoi(item));
        add_hbm_bound(row, bound, weight_read, kv_per_token);
        report["decode"].push_back(row);
    }
    report["ttft"] = ttft_runs(cfg, o, weights);
    const std::string text_out = report.dump(2);
    std::puts(text_out.c_str());
    if (!o.out.empty())
        std::ofstream(o.out) << text_out << "\n";
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    replica::replica_config cfg;
    cfg.backend = "cpu";
    bench_options o;
    common::flag_set f("lanes-engine-bench", "Decode throughput and TTFT of the replica engine.");
    f.section("Benchmark");
    f.add("batches", o.batches, "comma-separated decode batch sizes").value_name("LIST");
    f.add("decode-tokens", o.decode_tokens, "tokens generated per request in decode runs");
    f.add("decode-prompt-len", o.decode_prompt_len, "prompt bytes per request in decode runs")
        .value_name("BYTES");
    f.add("prompt-len", o.prompt_len, "prompt tokens for the TTFT runs").value_name("TOKENS");
    f.add("cached-len", o.cached_len, "prefix shared with an earlier request in the cached run")
        .value_name("TOKENS");
    f.add("repeats", o.repeats, "repetitions of each TTFT run (the median is reported)");
    f.add("hbm-tb-s", o.hbm_tb_s, "cuda: memory bandwidth for the decode bound, TB/s (H200: 4.8)");
    f.add("memory-gb-s", o.memory_gb_s,
          "cpu: memory read bandwidth for the decode bound, GB/s (0: measured on one thread)");
    f.add("out", o.out, "also write the JSON here").value_name("PATH");
    replica::add_engine_flags(f, cfg); // the replica's own engine flags (backend defaults to cpu)
    auto errors = f.parse(argc, argv);
    if (f.print_if_requested())
        return 0;
    auto more = replica::validate(cfg);
    errors.insert(errors.end(), more.begin(), more.end());
    if (!errors.empty())
        return common::report_config_errors("lanes-engine-bench", errors);
    common::log::set_level(common::log::level::warn);
    try {
        return run_bench(cfg, o);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "lanes-engine-bench: %s\n", e.what());
        return 1;
    }
}
