// lanes-bench end to end: a short shared-prefix run through a real router and replicas.
#include "harness.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <fstream>
#include <memory>
#include <sstream>

using namespace lanes;
using namespace std::chrono_literals;

TEST_CASE("lanes-bench runs a shared-prefix workload through the router", "[bench]") {
    test::fleet f(2, {"--backend", "sim", "--sim-speedup", "20"}, {"--policy", "prefix"});
    const test::process& router = *f.router;
    const std::string out = "/tmp/lanes-bench-test-" + std::to_string(router.port()) + ".json";
    const std::string cmd = std::string(LANES_BENCH_BIN) + " --url " + router.url() +
                            " --workload shared-prefix --groups 4 --prompts-per-group 6 "
                            "--system-len 256 --question-len 32 --output-len 8 --concurrency 4 "
                            "--out " +
                            out + " > /dev/null 2>&1";
    REQUIRE(std::system(cmd.c_str()) == 0);
    std::ifstream in(out);
    std::stringstream text;
    text << in.rdbuf();
    const auto r = nlohmann::json::parse(text.str());
    CHECK(r["completed"] == 24);
    CHECK(r["failed"] == 0);
    CHECK(r["output_token_throughput"].get<double>() > 0);
    CHECK(r["ttft_s"]["p50"].get<double>() > 0);
    CHECK(r["per_replica"].size() == 2);
    // 4 groups x 6 prompts: 20 of 24 can reuse their group's 256-byte system prompt.
    const double ideal = r["prefix_cache_hit_rate"]["ideal"].get<double>();
    CHECK(ideal > 0.6);
    REQUIRE(r["prefix_cache_hit_rate"]["measured"].is_number());
    CHECK(r["prefix_cache_hit_rate"]["measured"].get<double>() > 0.5 * ideal);
    std::remove(out.c_str());

    // A URL where nothing listens: a clear message and exit status 2.
    const std::string bad = std::string(LANES_BENCH_BIN) +
                            " --url http://127.0.0.1:1 --workload random --requests 1 "
                            "> /dev/null 2>&1";
    const int status = std::system(bad.c_str());
    CHECK(WEXITSTATUS(status) == 2);
    const std::string bad_flag = std::string(LANES_BENCH_BIN) + " --workload nope > /dev/null 2>&1";
    CHECK(WEXITSTATUS(std::system(bad_flag.c_str())) == 2);
}
