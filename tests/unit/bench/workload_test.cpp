#include "bench/report.hpp"
#include "bench/workload.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <set>

using namespace lanes::bench;

TEST_CASE("shared-prefix: groups share exactly their system prompt", "[workload]") {
    workload_config cfg;
    cfg.groups = 5;
    cfg.prompts_per_group = 7;
    cfg.system_len = 100;
    cfg.question_len = 20;
    cfg.output_len = 9;
    std::string error;
    const auto w = make_workload(cfg, error);
    REQUIRE(error.empty());
    REQUIRE(w.size() == 35);
    std::map<std::string, int> by_system;
    for (const auto& s : w) {
        REQUIRE(s.size() == 1);
        CHECK(s[0].prompt.size() == 120);
        CHECK(s[0].max_tokens == 9);
        ++by_system[s[0].prompt.substr(0, 100)];
    }
    CHECK(by_system.size() == 5);
    for (const auto& [system, n] : by_system)
        CHECK(n == 7);
    // Shuffled: the first 7 are not all one group.
    std::set<std::string> first;
    for (int i = 0; i < 7; ++i)
        first.insert(w[static_cast<std::size_t>(i)][0].prompt.substr(0, 100));
    CHECK(first.size() > 1);
    // Same seed, same workload; another seed, another one.
    CHECK(make_workload(cfg, error)[0][0].prompt == w[0][0].prompt);
    cfg.seed = 2;
    CHECK(make_workload(cfg, error)[0][0].prompt != w[0][0].prompt);
}

TEST_CASE("multi-turn: each turn extends the previous one with a session key", "[workload]") {
    workload_config cfg;
    cfg.kind = "multi-turn";
    cfg.sessions = 3;
    cfg.turns = 4;
    cfg.turn_len = 50;
    std::string error;
    const auto w = make_workload(cfg, error);
    REQUIRE(w.size() == 3);
    for (const auto& s : w) {
        REQUIRE(s.size() == 4);
        for (std::size_t t = 1; t < s.size(); ++t) {
            // The earlier turn's prompt minus its trailing generation prompt is a prefix.
            const std::string earlier =
                s[t - 1].prompt.substr(0, s[t - 1].prompt.rfind("<|assistant|>"));
            CHECK(s[t].prompt.starts_with(earlier));
            CHECK(s[t].prompt.size() > s[t - 1].prompt.size());
            CHECK(s[t].session == s[0].session);
        }
    }
    CHECK(w[0][0].session != w[1][0].session);
}

namespace {

// A trace file's workload at half its timestamps; three requests expected.
std::vector<stream> three_from(const char* kind, const char* path) {
    workload_config cfg;
    cfg.kind = kind;
    cfg.trace_file = path;
    cfg.time_scale = 0.5;
    std::string error;
    auto w = make_workload(cfg, error);
    REQUIRE(error.empty());
    REQUIRE(w.size() == 3);
    return w;
}

} // namespace

TEST_CASE("trace: equal hash ids give equal bytes, different ids different bytes", "[workload]") {
    char path[] = "/tmp/lanes-trace-XXXXXX";
    REQUIRE(mkstemp(path) >= 0);
    std::ofstream(path)
        << R"({"timestamp": 0, "input_length": 1100, "output_length": 5, "hash_ids": [1, 2, 3]}
{"timestamp": 1500, "input_length": 1024, "output_length": 7, "hash_ids": [1, 2]}
{"timestamp": 3000, "input_length": 600, "output_length": 2, "hash_ids": [9, 2]}
)";
    workload_config cfg;
    cfg.kind = "trace";
    cfg.trace_file = path;
    cfg.time_scale = 0.5;
    std::string error;
    const auto w = three_from("trace", path);
    const auto& a = w[0][0].prompt;
    const auto& b = w[1][0].prompt;
    const auto& c = w[2][0].prompt;
    CHECK(a.size() == 1100);
    CHECK(b.size() == 1024);
    CHECK(c.size() == 600);
    CHECK(a.substr(0, 1024) == b);                 // ids 1, 2 shared
    CHECK(c.substr(0, 512) != a.substr(0, 512));   // id 9 differs from id 1
    CHECK(c.substr(512, 88) == a.substr(512, 88)); // id 2 in second place, same bytes
    CHECK(w[1][0].max_tokens == 7);
    CHECK(w[1][0].arrival_s == Approx(0.75));
    // length-scale halves the blocks and keeps the sharing.
    cfg.length_scale = 0.5;
    const auto h = make_workload(cfg, error);
    CHECK(h[0][0].prompt.size() == 550);
    CHECK(h[0][0].prompt.substr(0, 512) == h[1][0].prompt);
    std::ofstream(path) << "{\"timestamp\": 0}\n";
    CHECK(make_workload(cfg, error).empty());
    CHECK(error.find(":1:") != std::string::npos);
    // Wrong types are a message naming the line, not an exception.
    for (const char* bad :
         {R"({"timestamp": "0", "input_length": 10, "output_length": 1, "hash_ids": [1]})",
          R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": ["a"]})",
          R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": [1.5]})",
          R"({"timestamp": 0, "input_length": 10, "output_length": 1, "hash_ids": []})",
          R"({"timestamp": 0, "input_length": -4, "output_length": 1, "hash_ids": [1]})"}) {
        INFO(bad);
        std::ofstream(path) << R"({"timestamp": 0, "input_length": 10, "output_length": 1, )"
                               R"("hash_ids": [1]})"
                            << "\n"
                            << bad << "\n";
        error.clear();
        CHECK(make_workload(cfg, error).empty());
        CHECK(error.find(":2:") != std::string::npos);
    }
    std::remove(path);
}

TEST_CASE("ideal hit rate counts blocks already sent, capped like vLLM", "[workload]") {
    // Two identical 63-byte prompts: 64 tokens with BOS; the second can hit 3 of 4 blocks.
    const std::string p(63, 'z');
    std::vector<stream> w = {{request_spec{p, 1, std::nullopt, -1}},
                             {request_spec{p, 1, std::nullopt, -1}}};
    CHECK(ideal_hit_rate(w, 16) == Approx(48.0 / 128.0));
    w.push_back({request_spec{std::string(63, 'y'), 1, std::nullopt, -1}});
    CHECK(ideal_hit_rate(w, 16) == Approx(48.0 / 192.0));
}

TEST_CASE("report: throughput, errors by kind, per-replica spread, hit rate", "[report]") {
    std::vector<request_record> records(4);
    for (int i = 0; i < 3; ++i) {
        records[static_cast<std::size_t>(i)].status = 200;
        records[static_cast<std::size_t>(i)].ttft = 0.1 * (i + 1);
        records[static_cast<std::size_t>(i)].e2e = 1.0;
        records[static_cast<std::size_t>(i)].completion_tokens = 10;
        records[static_cast<std::size_t>(i)].prompt_tokens = 5;
        records[static_cast<std::size_t>(i)].replica = i == 0 ? "a" : "b";
    }
    records[3].error = "connect: refused";
    run_context ctx;
    ctx.ideal_hit_rate = 0.5;
    ctx.counters_before = std::make_pair(100.0, 1000.0);
    ctx.counters_after = std::make_pair(400.0, 2000.0);
    const auto r = make_report({}, ctx, records, 2.0);
    CHECK(r["completed"] == 3);
    CHECK(r["failed"] == 1);
    CHECK(r["errors"]["connect"] == 1);
    CHECK(r["request_throughput"].get<double>() == Approx(1.5));
    CHECK(r["output_token_throughput"].get<double>() == Approx(15.0));
    CHECK(r["ttft_s"]["p50"].get<double>() == Approx(0.2));
    // (e2e - ttft) / (tokens - 1): 0.9/9, 0.8/9, 0.7/9
    CHECK(r["tpot_s"]["p50"].get<double>() == Approx(0.8 / 9.0));
    CHECK(r["tpot_s"]["count"] == 3);
    CHECK(r["arrival_lag_s"]["count"] == 0); // closed loop: no schedule
    CHECK(r["per_replica"]["b"] == 2);
    CHECK(r["imbalance"].get<double>() == Approx(2.0 / 1.5));
    CHECK(r["prefix_cache_hit_rate"]["measured"].get<double>() == Approx(0.3));
    CHECK(r["timeline"].size() == 4);
    // Open loop: the lag of each scheduled arrival (failed requests included).
    records[0].start_s = 0.5;
    records[0].scheduled_s = 0.25;
    records[3].start_s = 1.0;
    records[3].scheduled_s = 1.0;
    const auto o = make_report({}, ctx, records, 2.0);
    CHECK(o["arrival_lag_s"]["count"] == 2);
    CHECK(o["arrival_lag_s"]["max"].get<double>() == Approx(0.25));
    // A replica the router has that served nothing counts as a zero in the spread.
    ctx.replicas = {"a", "b", "c"};
    const auto z = make_report({}, ctx, records, 2.0);
    CHECK(z["per_replica"]["c"] == 0);
    CHECK(z["imbalance"].get<double>() == Approx(2.0 / 1.0));
}

TEST_CASE("azure trace: lengths and arrival times from the CSV, no sharing", "[workload]") {
    char path[] = "/tmp/lanes-azure-XXXXXX";
    REQUIRE(mkstemp(path) >= 0);
    std::ofstream(path) << "TIMESTAMP,ContextTokens,GeneratedTokens\r\n"
                           "2023-11-16 18:15:46.6805900,374,44\r\n"
                           "2023-11-16 18:15:50.9951690,396,109\r\n"
                           "2023-11-16 18:16:46,20,1\r\n";
    const auto w = three_from("azure", path);
    CHECK(w[0][0].prompt.size() == 374);
    CHECK(w[1][0].max_tokens == 109);
    CHECK(w[0][0].arrival_s == Approx(0.0));
    CHECK(w[1][0].arrival_s == Approx((50.9951690 - 46.6805900) * 0.5));
    CHECK(w[2][0].arrival_s == Approx((106.0 - 46.6805900) * 0.5));
    CHECK(w[0][0].prompt.substr(0, 16) != w[1][0].prompt.substr(0, 16));
    // A malformed line is a clear error naming it.
    std::ofstream(path) << "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,abc,4\n";
    workload_config cfg;
    cfg.kind = "azure";
    cfg.trace_file = path;
    std::string error;
    const auto bad = make_workload(cfg, error);
    CHECK(bad.empty());
    CHECK(error.find(":2: expected TIMESTAMP") != std::string::npos);
    std::remove(path);
}
