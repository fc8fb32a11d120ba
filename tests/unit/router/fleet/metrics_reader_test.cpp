#include "router/fleet/metrics_reader.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <sstream>

using namespace lanes;

TEST_CASE("reads vLLM V1 metrics from the fixture", "[metrics_reader]") {
    std::ifstream in(std::string(LANES_SHARED_DIR) + "/fixtures/vllm_v1_metrics.txt");
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    const auto s = router::read_replica_metrics(common::prom::parse(text.str()));
    REQUIRE(s.kv_usage);
    CHECK(*s.kv_usage == Approx(0.0234375));
    CHECK(s.waiting == 1);
    CHECK(s.running == 3);
    CHECK(s.prefix_cache_hits == 30720.0);
    CHECK(s.prefix_cache_queries == 52311.0);
    CHECK(s.num_blocks == 8192);
    CHECK(s.block_size == 16);
}

TEST_CASE("reads vLLM V0 names", "[metrics_reader]") {
    const std::string v0 =
        R"(# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="m"} 0.5
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} 7.0
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 2.0
# TYPE vllm:gpu_prefix_cache_hits_total counter
vllm:gpu_prefix_cache_hits_total{model_name="m"} 160.0
# TYPE vllm:gpu_prefix_cache_queries_total counter
vllm:gpu_prefix_cache_queries_total{model_name="m"} 400.0
# TYPE vllm:gpu_prefix_cache_hit_rate gauge
vllm:gpu_prefix_cache_hit_rate{model_name="m"} 0.4
)";
    const auto s = router::read_replica_metrics(common::prom::parse(v0));
    CHECK(s.kv_usage == 0.5);
    CHECK(s.waiting == 7);
    CHECK(s.running == 2);
    CHECK(s.prefix_cache_hits == 160.0);
    CHECK(s.prefix_cache_queries == 400.0);
    CHECK(!s.num_blocks);
}

TEST_CASE("reads SGLang names and sums several engines", "[metrics_reader]") {
    const std::string sglang = R"(# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="m"} 0.25
# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m"} 4.0
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="m"} 3.0
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{model_name="m"} 0.75
)";
    const auto s = router::read_replica_metrics(common::prom::parse(sglang));
    CHECK(s.kv_usage == 0.25);
    CHECK(s.running == 4);
    CHECK(s.waiting == 3);
    CHECK(!s.prefix_cache_hits); // SGLang exports a rate, not counters

    const std::string two_engines = R"(vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.2
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0.4
vllm:num_requests_waiting{engine="0",model_name="m"} 1.0
vllm:num_requests_waiting{engine="1",model_name="m"} 2.0
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 10.0
vllm:prefix_cache_hits_created{engine="0",model_name="m"} 1.7e+09
)";
    const auto t = router::read_replica_metrics(common::prom::parse(two_engines));
    CHECK(*t.kv_usage == Approx(0.3));
    CHECK(t.waiting == 3);
    CHECK(t.prefix_cache_hits == 10.0); // _created is not a counter value
}

TEST_CASE("unusable values are dropped, engines' blocks add up", "[metrics_reader]") {
    const std::string broken = R"(vllm:kv_cache_usage_perc{model_name="m"} NaN
vllm:num_requests_waiting{model_name="m"} +Inf
vllm:num_requests_running{model_name="m"} -3
vllm:prefix_cache_hits_total{model_name="m"} NaN
vllm:prefix_cache_queries_total{model_name="m"} 12
)";
    const auto s = router::read_replica_metrics(common::prom::parse(broken));
    CHECK(!s.kv_usage);
    CHECK(!s.waiting);
    CHECK(!s.running);
    CHECK(!s.prefix_cache_hits);
    CHECK(s.prefix_cache_queries == 12.0);

    const std::string two_engines =
        R"(vllm:cache_config_info{block_size="16",engine="0",num_gpu_blocks="1000"} 1.0
vllm:cache_config_info{block_size="16",engine="1",num_gpu_blocks="1200"} 1.0
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 1.5
)";
    const auto t = router::read_replica_metrics(common::prom::parse(two_engines));
    CHECK(t.num_blocks == 2200);
    CHECK(t.block_size == 16);
    CHECK(t.kv_usage == 1.0); // a usage over 1 counts as full
}

TEST_CASE("reads what the prefill cost model fits on, and a lanes replica's max_num_seqs",
          "[metrics_reader]") {
    const std::string text =
        R"(# TYPE vllm:request_prefill_time_seconds histogram
vllm:request_prefill_time_seconds_bucket{engine="0",le="+Inf",model_name="m"} 4
vllm:request_prefill_time_seconds_sum{engine="0",model_name="m"} 0.25
vllm:request_prefill_time_seconds_count{engine="0",model_name="m"} 4
vllm:request_prefill_time_seconds_sum{engine="1",model_name="m"} 0.75
vllm:request_prefill_time_seconds_count{engine="1",model_name="m"} 6
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 1000
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 7
vllm:request_success_total{engine="0",finished_reason="length",model_name="m"} 3
# TYPE lanes_replica_scheduler_info gauge
lanes_replica_scheduler_info{max_num_batched_tokens="2048",max_num_seqs="64"} 1
)";
    const auto s = router::read_replica_metrics(common::prom::parse(text));
    CHECK(s.prefill_seconds == 1.0);
    CHECK(s.prefills == 10.0);
    CHECK(s.prompt_tokens == 1000.0);
    CHECK(s.finished == 10.0);
    CHECK(s.max_num_seqs == 64);
    // An absurd or malformed limit is not believed.
    const auto bad = router::read_replica_metrics(
        common::prom::parse("lanes_replica_scheduler_info{max_num_seqs=\"-3\"} 1\n"
                            "vllm:request_prefill_time_seconds_sum NaN\n"));
    CHECK_FALSE(bad.max_num_seqs);
    CHECK_FALSE(bad.prefill_seconds);
}
