// lanes-bench: generate a workload, drive it through a router or replica, write a JSON report.
#include "bench/report.hpp"
#include "bench/runner.hpp"
#include "common/config_util.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>

int main(int argc, char** argv) {
    using namespace lanes;
    bench::bench_config cfg;
    common::flag_set flags("lanes-bench", "Load generator for OpenAI-compatible LLM servers.");
    flags.add("url", cfg.url, "router or replica base URL (loopback only for load tests)");
    flags.add("workload", cfg.workload, "workload: random");
    flags.add("requests", cfg.requests, "number of requests");
    flags.add("concurrency", cfg.concurrency, "requests in flight (closed loop)");
    flags.add("input-len", cfg.input_len, "prompt length in bytes (= tokens)");
    flags.add("output-len", cfg.output_len, "max_tokens per request");
    flags.add("seed", cfg.seed, "seed for the workload");
    flags.add("model", cfg.model, "model name to send (default: none)");
    flags.add("out", cfg.out, "result JSON file");
    flags.add("request-timeout", cfg.request_timeout, "per-operation timeout");
    auto errors = flags.parse(argc, argv);
    if (flags.help_requested()) {
        std::fputs(flags.usage().c_str(), stdout);
        return 0;
    }
    std::string why;
    const auto target = common::http::parse_url(cfg.url, &why);
    if (!target)
        errors.push_back("--url: " + why);
    if (cfg.workload != "random")
        errors.push_back("--workload '" + cfg.workload + "' is unknown; choose: random");
    if (cfg.requests < 1)
        errors.push_back("--requests must be at least 1");
    if (cfg.concurrency < 1)
        errors.push_back("--concurrency must be at least 1");
    if (cfg.input_len < 1 || cfg.output_len < 1)
        errors.push_back("--input-len and --output-len must be at least 1");
    if (!errors.empty())
        return common::report_config_errors("lanes-bench", errors);

    // Fail fast, with a clear message, when nothing answers at the URL.
    {
        boost::asio::io_context io;
        common::http::fetch_result probe;
        const common::http::fetch_options probe_options;
        boost::asio::co_spawn(
            io,
            [&]() -> boost::asio::awaitable<void> {
                probe = co_await common::http::fetch(io.get_executor(), *target,
                                                     boost::beast::http::verb::get, "/health",
                                                     probe_options);
            },
            boost::asio::detached);
        io.run();
        if (probe.ec || probe.status != 200) {
            std::fprintf(stderr, "lanes-bench: %s is not reachable: %s\n", cfg.url.c_str(),
                         probe.ec ? probe.ec.message().c_str()
                                  : ("/health answered " + std::to_string(probe.status)).c_str());
            return 2;
        }
    }
    const auto prompts = bench::random_workload(cfg);
    double wall = 0;
    const auto records = bench::run(cfg, *target, prompts, wall);
    const auto report = bench::make_report(cfg, records, wall);
    std::ofstream(cfg.out) << report.dump(2) << "\n";
    std::printf("%s\nresults written to %s\n", bench::describe(report).c_str(), cfg.out.c_str());
    return report["failed"].get<std::int64_t>() == 0 ? 0 : 1;
}
