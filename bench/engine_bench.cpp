// lanes-engine-bench: the replica engine in process, no HTTP. Measures decode throughput at given
// batch sizes and the time to first token of a long prompt with and without a cached prefix.
// Prints one JSON object (and writes it to --out when given).
#include "common/config_util.hpp"
#include "common/log.hpp"
#include "replica/engine.hpp"

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

} // namespace

int main(int argc, char** argv) {
    replica::replica_config cfg;
    cfg.backend = "cpu";
    std::string batches = "1,16";
    std::int64_t decode_tokens = 64, prompt_len = 2048, cached_len = 1920, repeats = 3;
    std::string out;
    common::flag_set f("lanes-engine-bench", "Decode throughput and TTFT of the replica engine.");
    f.add("backend", cfg.backend, "cpu, cuda or sim");
    f.add("preset", cfg.preset, "model preset");
    f.add("kv-blocks", cfg.kv_blocks, "KV blocks (0: from --kv-cache-mb)");
    f.add("kv-cache-mb", cfg.kv_cache_mb, "KV budget in MiB");
    f.add("cpu-threads", cfg.cpu_threads, "OpenBLAS threads");
    f.add("max-num-batched-tokens", cfg.max_num_batched_tokens, "tokens per step");
    f.add("max-num-seqs", cfg.max_num_seqs, "sequences per step");
    f.add("batches", batches, "comma-separated decode batch sizes");
    f.add("decode-tokens", decode_tokens, "tokens generated per request in decode runs");
    f.add("prompt-len", prompt_len, "prompt tokens for the TTFT runs");
    f.add("cached-len", cached_len, "prefix shared with an earlier request in the cached run");
    f.add("repeats", repeats, "repetitions of each TTFT run (the median is reported)");
    f.add("out", out, "also write the JSON here");
    auto errors = f.parse(argc, argv);
    if (f.help_requested()) {
        std::fputs(f.usage().c_str(), stdout);
        return 0;
    }
    if (!errors.empty())
        return common::report_config_errors("lanes-engine-bench", errors);
    common::log::set_level(common::log::level::warn);
    cfg.kv_blocks =
        static_cast<std::int64_t>(replica::resolve_kv_blocks(cfg, *replica::preset(cfg.preset)));
    cfg.max_model_len = std::max<std::int64_t>(cfg.max_model_len, prompt_len + 16);

    nlohmann::json report = {{"backend", cfg.backend},
                             {"preset", cfg.preset},
                             {"kv_blocks", cfg.kv_blocks},
                             {"cpu_threads", cfg.cpu_threads}};
    std::stringstream list(batches);
    for (std::string item; std::getline(list, item, ',');) {
        const auto b = std::stoi(item);
        replica::replica_metrics m("bench", 16, static_cast<long>(cfg.kv_blocks));
        replica::engine eng(cfg, m);
        eng.start();
        std::vector<replica::engine_request> reqs;
        for (int i = 0; i < b; ++i)
            reqs.push_back(request(text(32, static_cast<char>(i)), decode_tokens));
        const auto r = run(eng, reqs);
        report["decode"].push_back({{"batch", b},
                                    {"tokens", r.tokens},
                                    {"wall_s", r.wall_s},
                                    {"tokens_per_s", static_cast<double>(r.tokens) / r.wall_s}});
    }
    // TTFT: a fresh engine per repetition, so "uncached" really is cold.
    std::vector<double> cold, warm;
    for (std::int64_t i = 0; i < repeats; ++i) {
        replica::replica_metrics m("bench", 16, static_cast<long>(cfg.kv_blocks));
        replica::engine eng(cfg, m);
        eng.start();
        const std::string prefix = text(static_cast<std::size_t>(cached_len), 'p');
        const auto tail = static_cast<std::size_t>(prompt_len - cached_len - 1); // + BOS
        cold.push_back(run(eng, {request(prefix + text(tail, 'x'), 1)}).max_ttft_s);
        warm.push_back(run(eng, {request(prefix + text(tail, 'y'), 1)}).max_ttft_s);
    }
    std::sort(cold.begin(), cold.end());
    std::sort(warm.begin(), warm.end());
    const double cold_s = cold[cold.size() / 2], warm_s = warm[warm.size() / 2];
    report["ttft"] = {
        {"prompt_tokens", prompt_len},
        {"cached_tokens", cached_len},
        {"cached_fraction", static_cast<double>(cached_len) / static_cast<double>(prompt_len)},
        {"uncached_s", cold_s},
        {"cached_s", warm_s},
        {"speedup", cold_s / warm_s}};
    const std::string text_out = report.dump(2);
    std::puts(text_out.c_str());
    if (!out.empty())
        std::ofstream(out) << text_out << "\n";
    return 0;
}
