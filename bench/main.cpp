// lanes-bench: generate a workload, drive it through a router or replica, write a JSON report.
#include "bench/report.hpp"
#include "bench/runner.hpp"
#include "bench/sim/simulate_cli.hpp"
#include "bench/workload.hpp"
#include "common/config_util.hpp"
#include "common/metrics/prom_parser.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <thread>
#include <unistd.h>

namespace {

using namespace lanes;

// Time for the router to scrape its replicas once more before the "after" read.
constexpr auto settle = std::chrono::milliseconds(400);

common::http::fetch_result get(const common::http::url& target, std::string_view path) {
    const common::http::fetch_options options;
    return common::http::fetch_blocking(target, boost::beast::http::verb::get, path, options);
}

// The fleet's prefix-cache (hits, queries) in tokens: the router's mirrored counters, or a
// replica's own when the URL points at one.
std::optional<std::pair<double, double>> prefix_counters(const common::http::url& target) {
    const auto res = get(target, "/metrics");
    if (res.ec || res.status != 200)
        return std::nullopt;
    const auto p = common::prom::parse(res.body);
    auto hits = p.sum("lanes_router_replica_prefix_cache_hits_total");
    auto queries = p.sum("lanes_router_replica_prefix_cache_queries_total");
    if (!hits || !queries) {
        hits = p.sum("vllm:prefix_cache_hits_total");
        queries = p.sum("vllm:prefix_cache_queries_total");
    }
    if (!hits || !queries)
        return std::nullopt;
    return std::make_pair(*hits, *queries);
}

// The router's replicas, by the labels of its lanes_router_replica_up; none for a replica.
std::vector<std::string> router_replicas(const common::http::url& target) {
    std::vector<std::string> out;
    const auto res = get(target, "/metrics");
    if (res.ec || res.status != 200)
        return out;
    for (const auto& s : common::prom::parse(res.body).samples)
        if (s.name == "lanes_router_replica_up")
            if (const auto id = s.label("replica"))
                out.emplace_back(*id);
    return out;
}

} // namespace

int main(int argc, char** argv) {
    if (argc > 1 && std::string_view(argv[1]) == "simulate")
        return bench::sim::simulate_main(argc - 1, argv + 1);
    bench::bench_config cfg;
    bench::workload_config w;
    std::int64_t block_size = 16;
    common::flag_set f("lanes-bench",
                       "Load generator for OpenAI-compatible LLM servers. The offline "
                       "simulator is lanes-bench simulate (see lanes-bench simulate --help).");
    f.section("Target");
    f.add("url", cfg.url, "router or replica base URL (loopback only for load tests)")
        .value_name("URL");
    f.add("model", cfg.model, "model name to send (default: none)").value_name("MODEL");
    f.add("out", cfg.out, "result JSON file").value_name("PATH");
    f.add("request-timeout", cfg.request_timeout, "per-operation timeout");
    f.add("block-size", block_size, "block size for the ideal hit rate").value_name("TOKENS");
    f.section("Load");
    f.add("concurrency", cfg.concurrency, "closed loop: streams in flight");
    f.add("rate", cfg.rate,
          "open loop: Poisson arrivals per second (0: closed loop): of streams, or for agents, "
          "hot-tenant and bursty of requests (a session's next turn, else a new session)");
    f.add("trace-times", cfg.trace_times, "open loop at the trace's timestamps");
    bench::add_workload_flags(f, w);
    auto errors = f.parse(argc, argv);
    if (f.print_if_requested())
        return 0;
    std::string why;
    const auto target = common::http::parse_url(cfg.url, &why);
    if (!target)
        errors.push_back("--url: " + why);
    if ((w.kind == "trace" || w.kind == "azure") && w.trace_file.empty())
        errors.push_back("--workload " + w.kind + " needs --trace FILE");
    if (cfg.concurrency < 1 || cfg.rate < 0)
        errors.push_back("--concurrency must be at least 1 and --rate not negative");
    if (cfg.trace_times && w.kind != "trace" && w.kind != "azure")
        errors.push_back("--trace-times needs --workload trace (other workloads have no times)");
    if (w.time_scale <= 0 || w.length_scale <= 0 || block_size < 1)
        errors.push_back("--time-scale, --length-scale and --block-size must be positive");
    std::vector<bench::stream> workload;
    if (errors.empty()) {
        std::string error;
        workload = bench::make_workload(w, error);
        if (!error.empty())
            errors.push_back(error);
        else if (workload.empty())
            errors.push_back("the workload is empty");
    }
    if (!errors.empty())
        return common::report_config_errors("lanes-bench", errors);
    // A trace replays at its own timestamps unless a --rate is given.
    cfg.trace_times =
        cfg.trace_times || ((w.kind == "trace" || w.kind == "azure") && cfg.rate == 0);
    cfg.progress = ::isatty(STDERR_FILENO) != 0;
    cfg.seed = w.seed; // arrivals follow the same seed as the workload
    cfg.session_arrivals = bench::is_skewed_workload(w.kind);
    cfg.continue_share = w.continue_share;

    const auto health = get(*target, "/health");
    if (health.ec || health.status != 200) {
        std::fprintf(stderr, "lanes-bench: %s is not reachable: %s\n", cfg.url.c_str(),
                     health.ec ? health.ec.message().c_str()
                               : ("/health answered " + std::to_string(health.status)).c_str());
        return 2;
    }
    bench::run_context ctx;
    ctx.workload = w;
    ctx.ideal_hit_rate = bench::ideal_hit_rate(workload, static_cast<std::size_t>(block_size));
    ctx.counters_before = prefix_counters(*target);
    ctx.replicas = router_replicas(*target);
    double wall = 0;
    const auto records = bench::run(cfg, *target, workload, wall);
    std::this_thread::sleep_for(settle);
    ctx.counters_after = prefix_counters(*target);
    const auto report = bench::make_report(cfg, ctx, records, wall);
    std::ofstream file(cfg.out);
    file << report.dump(2) << "\n";
    file.close();
    if (!file) {
        std::fprintf(stderr, "lanes-bench: cannot write %s\n", cfg.out.c_str());
        return 2;
    }
    std::printf("%s\nresults written to %s\n", bench::describe(report).c_str(), cfg.out.c_str());
    return report["failed"].get<std::int64_t>() == 0 ? 0 : 1;
}
