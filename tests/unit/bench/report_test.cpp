// lanes-bench's result file from synthetic records: latency summaries over the successful requests,
// errors by kind, the timeline, the measured hit rate, throughput and the spread.
// (workload_test.cpp has the report's overall case; these are the parts it leaves out.)
#include "bench/report.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace lanes::bench;
using nlohmann::json;

namespace {

request_record ok(double ttft, double e2e, std::int64_t completion, std::string replica = "a") {
    request_record r;
    r.status = 200;
    r.ttft = ttft;
    r.e2e = e2e;
    r.completion_tokens = completion;
    r.prompt_tokens = 5;
    r.replica = std::move(replica);
    return r;
}

request_record failed(std::string error, double e2e = 0.5) {
    request_record r;
    r.error = std::move(error);
    r.ttft = 100; // never counted
    r.e2e = e2e;
    r.itl = {5.0};
    return r;
}

} // namespace

TEST_CASE("report: latency summaries count the successful requests only", "[report]") {
    std::vector<request_record> records;
    for (int i = 0; i < 10; ++i) // TTFT 0.1 .. 1.0, one second after it to the end
        records.push_back(ok((i + 1) / 10.0, (i + 1) / 10.0 + 1.0, i == 9 ? 1 : 11));
    records[0].itl = {0.01, 0.03};
    records[1].itl = {0.02};
    records.push_back(failed("status 500"));
    records.push_back(failed("transport: reset"));
    const auto r = make_report({}, {}, records, 10.0);
    const auto& ttft = r["ttft_s"];
    CHECK(ttft["count"] == 10);
    CHECK(ttft["mean"].get<double>() == Approx(0.55));
    CHECK(ttft["p50"].get<double>() == Approx(0.55));
    CHECK(ttft["p90"].get<double>() == Approx(0.91));
    CHECK(ttft["p99"].get<double>() == Approx(0.991));
    CHECK(ttft["max"].get<double>() == Approx(1.0));
    CHECK(r["e2e_s"]["p50"].get<double>() == Approx(1.55));
    CHECK(r["e2e_s"]["max"].get<double>() == Approx(2.0));
    // Gaps of every request in one list: {0.01, 0.03, 0.02}; the failure's 5.0 is not in it.
    CHECK(r["itl_s"]["count"] == 3);
    CHECK(r["itl_s"]["p50"].get<double>() == Approx(0.02));
    CHECK(r["itl_s"]["p90"].get<double>() == Approx(0.028));
    CHECK(r["itl_s"]["max"].get<double>() == Approx(0.03));
    // TPOT: 1 s over 10 tokens after the first; the one-token request has none.
    CHECK(r["tpot_s"]["count"] == 9);
    CHECK(r["tpot_s"]["mean"].get<double>() == Approx(0.1));
    CHECK(r["tpot_s"]["max"].get<double>() == Approx(0.1));
    CHECK(r["completed"] == 10);
    CHECK(r["failed"] == 2);
    CHECK(r["output_token_throughput"].get<double>() == Approx((9 * 11 + 1) / 10.0));
    CHECK(r["input_token_throughput"].get<double>() == Approx(50 / 10.0));
}

TEST_CASE("report: errors by the text before the colon, and the timeline has every request",
          "[report]") {
    std::vector<request_record> records = {ok(0.2, 1.0, 4, ""), failed("status 503"),
                                           failed("status 503"), failed("transport: end of stream"),
                                           failed("protocol: no output", 0.75)};
    records[4].start_s = 1.25;
    const auto r = make_report({}, {}, records, 2.0);
    CHECK(r["errors"] == json{{"status 503", 2}, {"transport", 1}, {"protocol", 1}});
    CHECK(r["completed"] == 1);
    CHECK(r["failed"] == 4);
    REQUIRE(r["timeline"].size() == 5);
    CHECK(r["timeline"][0] == json{0.0, 1.0, ""});
    CHECK(r["timeline"][4] == json{1.25, 0.75, "protocol"});
    // A request straight to a replica (no x-lanes-replica) counts under "(direct)".
    CHECK(r["per_replica"] == json{{"(direct)", 1}});
    CHECK(r["per_replica_tokens"] == json{{"(direct)", 9}});
    CHECK(r["imbalance"].get<double>() == Approx(1.0));
}

TEST_CASE("report: the measured hit rate needs both counter reads and some queries", "[report]") {
    const std::vector<request_record> records = {ok(0.1, 0.5, 3)};
    run_context ctx;
    ctx.ideal_hit_rate = 0.75;
    auto r = make_report({}, ctx, records, 1.0);
    CHECK(r["prefix_cache_hit_rate"]["ideal"].get<double>() == Approx(0.75));
    CHECK(r["prefix_cache_hit_rate"]["measured"].is_null());
    CHECK_FALSE(r["prefix_cache_hit_rate"].contains("hit_tokens"));
    ctx.counters_before = std::make_pair(10.0, 100.0);
    ctx.counters_after = std::make_pair(10.0, 100.0); // nothing queried in between
    r = make_report({}, ctx, records, 1.0);
    CHECK(r["prefix_cache_hit_rate"]["measured"].is_null());
    CHECK(r["prefix_cache_hit_rate"]["query_tokens"].get<double>() == 0.0);
    ctx.counters_after = std::make_pair(40.0, 160.0); // 30 hit of 60 queried
    r = make_report({}, ctx, records, 1.0);
    CHECK(r["prefix_cache_hit_rate"]["hit_tokens"].get<double>() == 30.0);
    CHECK(r["prefix_cache_hit_rate"]["query_tokens"].get<double>() == 60.0);
    CHECK(r["prefix_cache_hit_rate"]["measured"].get<double>() == Approx(0.5));
    ctx.counters_before.reset(); // one read missing: no measurement
    CHECK(make_report({}, ctx, records, 1.0)["prefix_cache_hit_rate"]["measured"].is_null());
}

TEST_CASE("report: the config echoed, and no success, no spread, and a zero wall time",
          "[report]") {
    bench_config cfg;
    cfg.url = "http://10.0.0.1:8000";
    cfg.concurrency = 3;
    cfg.rate = 2.5;
    run_context ctx;
    ctx.workload.kind = "random";
    ctx.workload.seed = 9;
    ctx.workload.input_len = 77;
    const auto none = make_report(cfg, ctx, {failed("connect: refused")}, 0.0);
    CHECK(none["config"]["url"] == "http://10.0.0.1:8000");
    CHECK(none["config"]["concurrency"] == 3);
    CHECK(none["config"]["rate"].get<double>() == 2.5);
    CHECK(none["config"]["workload"] == "random");
    CHECK(none["config"]["seed"] == 9);
    CHECK(none["config"]["input_len"] == 77);
    CHECK(none["completed"] == 0);
    CHECK(none["imbalance"].get<double>() == 0.0); // no replica served anything
    CHECK(none["per_replica"].empty());
    CHECK(none["ttft_s"]["count"] == 0);
    CHECK(none["ttft_s"]["p99"].get<double>() == 0.0);
    CHECK(none["duration_s"].get<double>() == 0.0);
    CHECK(none["request_throughput"].get<double>() == 0.0); // 0 / 1e-9, not NaN
    // One success over no measurable time: divided by 1e-9 s.
    const auto fast = make_report(cfg, ctx, {ok(0.1, 0.2, 2)}, 0.0);
    CHECK(fast["request_throughput"].get<double>() == Approx(1e9));
    // Three replicas named by the router, one served twice, one once, one never: max 2 / mean 1.
    ctx.replicas = {"a", "b", "c"};
    const auto spread = make_report(
        cfg, ctx, {ok(0.1, 0.2, 2, "a"), ok(0.1, 0.2, 2, "a"), ok(0.1, 0.2, 2, "b")}, 1.0);
    CHECK(spread["per_replica"] == json{{"a", 2}, {"b", 1}, {"c", 0}});
    CHECK(spread["per_replica_tokens"] == json{{"a", 14}, {"b", 7}, {"c", 0}});
    CHECK(spread["imbalance"].get<double>() == Approx(2.0));
}

TEST_CASE("report: describe() words the main figures", "[report]") {
    run_context ctx;
    ctx.ideal_hit_rate = 0.5;
    const std::vector<request_record> records = {ok(0.1, 1.0, 4, "a"), ok(0.3, 1.0, 4, "b")};
    const auto r = make_report({}, ctx, records, 2.0);
    // TTFT p50 0.2 s and p99 0.1 + 0.99 * 0.2 = 0.298 s; 8 tokens in 2 s.
    CHECK(describe(r) == "2 ok, 0 failed in 2 s: 1 req/s, 4 output tok/s; TTFT p50 200 ms, p99 298 "
                         "ms; imbalance 1; prefix-cache hit rate n/a (ideal 0.5)");
    ctx.counters_before = std::make_pair(0.0, 0.0);
    ctx.counters_after = std::make_pair(1.0, 4.0);
    const auto measured = describe(make_report({}, ctx, records, 2.0));
    CHECK(measured.ends_with("prefix-cache hit rate 0.250000 (ideal 0.5)"));
}
