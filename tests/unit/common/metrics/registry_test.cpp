#include "common/metrics/exposition.hpp"
#include "common/metrics/prom_parser.hpp"
#include "common/metrics/registry.hpp"

#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <stdexcept>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>
#include <vector>

namespace m = lanes::common::metrics;
namespace prom = lanes::common::prom;

namespace {

// The registry behind the golden exposition below.
void fill_small_registry(m::registry& reg) {
    auto& requests = reg.add_counter("lanes_requests_total", "Requests received.");
    requests.with({}).inc();
    requests.with({}).inc(2.0);
    requests.with({}).inc(-5.0); // ignored: counters never go down

    auto& depth = reg.add_gauge("lanes_queue_depth", "Queued requests per replica.", {"replica"});
    depth.with({"b"}).set(2.0);
    depth.with({"a"}).set(0.5);

    reg.add_gauge("lanes_unused", "Never set.", {"x"});

    auto& latency = reg.add_histogram("lanes_latency_seconds", "Request latency.", {0.1, 0.5, 1.0},
                                      {"model_name", "engine"});
    auto& h = latency.with({"m", "0"});
    for (double v : {0.0625, 0.5, 0.75, 3.0})
        h.observe(v);
}

const char* const small_registry_text =
    "# HELP lanes_requests_total Requests received.\n"
    "# TYPE lanes_requests_total counter\n"
    "lanes_requests_total 3.0\n"
    "# HELP lanes_queue_depth Queued requests per replica.\n"
    "# TYPE lanes_queue_depth gauge\n"
    "lanes_queue_depth{replica=\"a\"} 0.5\n"
    "lanes_queue_depth{replica=\"b\"} 2.0\n"
    "# HELP lanes_unused Never set.\n"
    "# TYPE lanes_unused gauge\n"
    "# HELP lanes_latency_seconds Request latency.\n"
    "# TYPE lanes_latency_seconds histogram\n"
    "lanes_latency_seconds_bucket{engine=\"0\",le=\"0.1\",model_name=\"m\"} 1.0\n"
    "lanes_latency_seconds_bucket{engine=\"0\",le=\"0.5\",model_name=\"m\"} 2.0\n"
    "lanes_latency_seconds_bucket{engine=\"0\",le=\"1.0\",model_name=\"m\"} 3.0\n"
    "lanes_latency_seconds_bucket{engine=\"0\",le=\"+Inf\",model_name=\"m\"} 4.0\n"
    "lanes_latency_seconds_count{engine=\"0\",model_name=\"m\"} 4.0\n"
    "lanes_latency_seconds_sum{engine=\"0\",model_name=\"m\"} 4.3125\n";

struct promtool_result {
    int rc = -1; // exit status; -1 when promtool is not on PATH
    std::string output;
};

// Runs `promtool check metrics` on text.
promtool_result promtool_check(const std::string& text) {
    promtool_result res;
    if (std::system("command -v promtool > /dev/null 2>&1") != 0)
        return res;
    const auto base = std::filesystem::temp_directory_path() /
                      ("lanes_metrics_test_" + std::to_string(::getpid()));
    const auto in_path = base.string() + ".prom";
    const auto out_path = base.string() + ".out";
    {
        std::ofstream out(in_path, std::ios::binary);
        out << text;
    }
    const std::string cmd = "promtool check metrics < '" + in_path + "' > '" + out_path + "' 2>&1";
    const int status = std::system(cmd.c_str());
    res.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 255;
    std::ifstream out(out_path);
    std::ostringstream ss;
    ss << out.rdbuf();
    res.output = ss.str();
    std::filesystem::remove(in_path);
    std::filesystem::remove(out_path);
    return res;
}

} // namespace

TEST_CASE("exposition matches the golden text", "[metrics]") {
    m::registry reg;
    fill_small_registry(reg);
    CHECK(reg.expose() == small_registry_text);
}

TEST_CASE("unlabeled families are exposed from registration", "[metrics]") {
    m::registry reg;
    reg.add_counter("c_total", "A counter.");
    reg.add_gauge("g", "A gauge.");
    reg.add_histogram("h_seconds", "A histogram.", {0.5});
    CHECK(reg.expose() == "# HELP c_total A counter.\n"
                          "# TYPE c_total counter\n"
                          "c_total 0.0\n"
                          "# HELP g A gauge.\n"
                          "# TYPE g gauge\n"
                          "g 0.0\n"
                          "# HELP h_seconds A histogram.\n"
                          "# TYPE h_seconds histogram\n"
                          "h_seconds_bucket{le=\"0.5\"} 0.0\n"
                          "h_seconds_bucket{le=\"+Inf\"} 0.0\n"
                          "h_seconds_count 0.0\n"
                          "h_seconds_sum 0.0\n");
}

TEST_CASE("histogram buckets are `le` and non-cumulative internally", "[metrics]") {
    m::histogram h({1.0, 2.0});
    for (double v : {0.5, 1.0, 1.5, 2.0, 2.5, std::nan("")})
        h.observe(v);
    CHECK(h.bucket_counts() == std::vector<std::uint64_t>{2, 2, 2});
    CHECK(h.count() == 6);
    CHECK(std::isnan(h.sum()));
    m::histogram empty({});
    empty.observe(7.0);
    CHECK(empty.bucket_counts() == std::vector<std::uint64_t>{1});
    CHECK(empty.sum() == 7.0);
}

TEST_CASE("gauge set, inc and dec", "[metrics]") {
    m::gauge g;
    g.set(4.0);
    g.inc();
    g.dec(2.5);
    CHECK(g.value() == 2.5);
    g.dec(10.0);
    CHECK(g.value() == -7.5);
}

TEST_CASE("invalid names throw", "[metrics]") {
    m::registry reg;
    CHECK_THROWS_AS(reg.add_gauge("", "x"), std::invalid_argument);
    CHECK_THROWS_AS(reg.add_gauge("1abc", "x"), std::invalid_argument);
    CHECK_THROWS_AS(reg.add_gauge("a-b", "x"), std::invalid_argument);
    CHECK_THROWS_AS(reg.add_counter("requests", "x"), std::invalid_argument);
    CHECK_THROWS_AS(reg.add_counter("requests_total_x", "x"), std::invalid_argument);
    CHECK_NOTHROW(reg.add_counter("vllm:requests_total", "x"));
    CHECK_NOTHROW(reg.add_gauge("_a:b_9", "x"));

    CHECK_THROWS_AS(reg.add_gauge("g1", "x", {"__reserved"}), std::invalid_argument);
    CHECK_THROWS_AS(reg.add_gauge("g2", "x", {"1a"}), std::invalid_argument);
    CHECK_THROWS_AS(reg.add_gauge("g3", "x", {"a:b"}), std::invalid_argument);
    CHECK_THROWS_AS(reg.add_gauge("g4", "x", {"a", "a"}), std::invalid_argument);
    CHECK_THROWS_AS(reg.add_histogram("h1", "x", {1.0}, {"le"}), std::invalid_argument);
    CHECK_NOTHROW(reg.add_gauge("g5", "x", {"le"})); // only histograms reserve `le`

    CHECK_THROWS_AS(reg.add_histogram("h2", "x", {2.0, 1.0}), std::invalid_argument);
    CHECK_THROWS_AS(reg.add_histogram("h3", "x", {1.0, 1.0}), std::invalid_argument);
    CHECK_THROWS_AS(reg.add_histogram("h4", "x", {1.0, std::nan("")}), std::invalid_argument);
    CHECK_THROWS_AS(m::histogram({3.0, 2.0}), std::invalid_argument);

    // None of the failed registrations left anything behind.
    CHECK_NOTHROW(reg.add_gauge("g1", "x"));
    CHECK_NOTHROW(reg.add_histogram("h2", "x", {1.0}));
}

TEST_CASE("duplicate and clashing family names throw", "[metrics]") {
    m::registry reg;
    reg.add_gauge("dup", "x");
    CHECK_THROWS_AS(reg.add_gauge("dup", "x"), std::invalid_argument);
    reg.add_counter("dup_total", "x");
    CHECK_THROWS_AS(reg.add_counter("dup_total", "x"), std::invalid_argument);
    reg.add_histogram("lat", "x", {1.0});
    CHECK_THROWS_AS(reg.add_gauge("lat", "x"), std::invalid_argument);
    CHECK_THROWS_AS(reg.add_gauge("lat_count", "x"), std::invalid_argument);
    CHECK_THROWS_AS(reg.add_histogram("dup", "x", {1.0}), std::invalid_argument);
}

TEST_CASE("with() checks the number of label values", "[metrics]") {
    m::registry reg;
    auto& g = reg.add_gauge("g", "x", {"a", "b"});
    CHECK_THROWS_AS(g.with({"1"}), std::invalid_argument);
    CHECK_THROWS_AS(g.with({"1", "2", "3"}), std::invalid_argument);
    auto& child = g.with({"1", "2"});
    child.set(3.0);
    CHECK(&g.with({"1", "2"}) == &child);
    CHECK(g.with({"1", "2"}).value() == 3.0);
}

TEST_CASE("concurrent updates are not lost", "[metrics]") {
    m::registry reg;
    auto& c = reg.add_counter("c_total", "x", {"k"});
    auto& g = reg.add_gauge("g", "x");
    auto& h = reg.add_histogram("h", "x", {0.5});
    constexpr int threads = 8;
    constexpr int per_thread = 20000;
    std::vector<std::thread> pool;
    std::atomic<bool> go{false};
    for (int t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            while (!go.load())
                std::this_thread::yield();
            for (int i = 0; i < per_thread; ++i) {
                c.with({"same"}).inc();
                g.with({}).inc(t % 2 == 0 ? 1.0 : -1.0);
                h.with({}).observe(i % 2 == 0 ? 0.25 : 1.0);
                if (i % 1000 == 0)
                    (void)reg.expose();
            }
        });
    }
    go.store(true);
    for (auto& th : pool)
        th.join();
    CHECK(c.with({"same"}).value() == double(threads) * per_thread);
    CHECK(g.with({}).value() == 0.0);
    CHECK(h.with({}).count() == std::uint64_t{threads} * per_thread);
    CHECK(h.with({}).bucket_counts() ==
          std::vector<std::uint64_t>{threads * per_thread / 2, threads * per_thread / 2});
    CHECK(h.with({}).sum() == threads * (per_thread / 2) * 1.25);
}

TEST_CASE("exposition round-trips through the parser", "[metrics]") {
    m::registry reg;
    fill_small_registry(reg);
    reg.add_gauge("big", "Large and odd values.", {"v"}).with({"a,b}{"}).set(1750000012.345);
    const std::string text = reg.expose();
    const auto r = prom::parse(text);
    REQUIRE(r.ok());
    CHECK(r.types.at("lanes_requests_total") == "counter");
    CHECK(r.types.at("lanes_latency_seconds") == "histogram");
    CHECK(r.help.at("lanes_queue_depth") == "Queued requests per replica.");

    // Rebuild every sample line from the parsed samples: it must match the exposition.
    std::ostringstream rebuilt;
    for (const auto& s : r.samples) {
        rebuilt << s.name;
        if (!s.labels.empty()) {
            rebuilt << '{';
            for (std::size_t i = 0; i < s.labels.size(); ++i)
                rebuilt << (i ? "," : "") << s.labels[i].first << "=\""
                        << m::escape_label_value(s.labels[i].second) << '"';
            rebuilt << '}';
        }
        rebuilt << ' ' << m::format_value(s.value) << '\n';
    }
    std::istringstream in(text);
    std::string expected, line;
    while (std::getline(in, line))
        if (!line.starts_with("#"))
            expected += line + "\n";
    CHECK(rebuilt.str() == expected);
    CHECK(r.find("big", {{"v", "a,b}{"}})->value == 1750000012.345);
    CHECK(r.sum("lanes_latency_seconds_count") == 4.0);
}

TEST_CASE("promtool accepts the exposition", "[metrics][promtool]") {
    m::registry reg;
    fill_small_registry(reg);
    reg.add_gauge("lanes_escaped", "Backslash \\ and\nnewline.", {"path"})
        .with({"a\\b \"c\"\nd"})
        .set(-1e6);
    const promtool_result res = promtool_check(reg.expose());
    if (res.rc < 0)
        FAIL("promtool not on PATH: scripts/install-deps.sh installs the prometheus package");
    INFO(res.output);
    CHECK(res.rc == 0);

    // vLLM-style names: promtool only lints the ':' (exit 3), it must not fail to parse (exit 1).
    m::registry vllm;
    vllm.add_counter("vllm:prompt_tokens_total", "Prompt tokens.", {"model_name"})
        .with({"m"})
        .inc(52311.0);
    vllm.add_gauge("vllm:kv_cache_usage_perc", "KV usage.", {"model_name"})
        .with({"m"})
        .set(0.0234375);
    vllm.add_histogram("vllm:e2e_request_latency_seconds", "Latency.", {0.3, 1.0}, {"model_name"})
        .with({"m"})
        .observe(0.5);
    const promtool_result vllm_res = promtool_check(vllm.expose());
    INFO(vllm_res.output);
    CHECK((vllm_res.rc == 0 || vllm_res.rc == 3));
    CHECK(vllm_res.output.find("error") == std::string::npos);
}

TEST_CASE("retain drops the children of things gone, and they can come back", "[metrics]") {
    m::registry reg;
    auto& up = reg.add_gauge("t_up", "Up.", {"replica"});
    up.with({"a"}).set(1);
    up.with({"b"}).set(1);
    up.with({"c"}).set(0);
    up.retain([](const m::label_values& v) { return v.front() != "b"; });
    const std::string text = reg.expose();
    CHECK(text.find("t_up{replica=\"a\"} 1") != std::string::npos);
    CHECK(text.find("replica=\"b\"") == std::string::npos);
    CHECK(text.find("t_up{replica=\"c\"} 0") != std::string::npos);
    // A child made again after its removal starts afresh, and the lookup index finds it.
    CHECK(up.with({"b"}).value() == 0.0);
    up.with({"b"}).set(3);
    CHECK(up.with({"b"}).value() == 3.0);
    CHECK(reg.expose().find("t_up{replica=\"b\"} 3") != std::string::npos);
}

TEST_CASE("retire drops counters at once, keeps their storage two calls, and moves the generation",
          "[metrics]") {
    m::registry reg;
    auto& req = reg.add_counter("t_requests_total", "Requests.", {"replica"});
    req.with({"a"}).inc();
    m::counter& held = req.with({"b"});
    held.inc(2);
    const auto g0 = req.generation();
    req.retire([](const m::label_values& v) { return v.front() != "b"; });
    CHECK(req.generation() == g0 + 1);
    CHECK(reg.expose().find("replica=\"b\"") == std::string::npos);
    CHECK(reg.expose().find("t_requests_total{replica=\"a\"} 1") != std::string::npos);
    // A thread that looked the child up before the first retire may still update it.
    held.inc();
    CHECK(held.value() == 3.0);
    // Nothing dropped: the generation stays.
    req.retire([](const m::label_values&) { return true; });
    CHECK(req.generation() == g0 + 1);
    // The child made again starts afresh.
    CHECK(req.with({"b"}).value() == 0.0);
}
