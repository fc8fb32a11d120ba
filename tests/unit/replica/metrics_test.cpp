// The replica's /metrics as vLLM V1 writes it: names, types, HELP, labels and buckets against a
// scrape of vLLM (shared/fixtures/vllm_v1_metrics.txt), and values that follow the updates.
#include "replica/metrics.hpp"

#include "common/metrics/prom_parser.hpp"

#include <catch2/catch.hpp>

#include <fstream>
#include <set>
#include <sstream>

using namespace lanes;
using namespace lanes::replica;
namespace prom = lanes::common::prom;
using labels = std::vector<std::pair<std::string, std::string>>;

namespace {

prom::parse_result scrape(const replica_metrics& m) {
    auto r = prom::parse(m.expose());
    REQUIRE(r.ok());
    return r;
}

double value_of(const prom::parse_result& r, std::string_view name, const labels& match = {}) {
    const prom::sample* s = r.find(name, match);
    REQUIRE(s != nullptr);
    return s->value;
}

std::set<std::string> label_names(const prom::sample& s) {
    std::set<std::string> names;
    for (const auto& [k, v] : s.labels)
        names.insert(k);
    return names;
}

prom::parse_result vllm_fixture() {
    std::ifstream in(std::string(LANES_SHARED_DIR) + "/fixtures/vllm_v1_metrics.txt");
    REQUIRE(in.good());
    std::ostringstream ss;
    ss << in.rdbuf();
    auto r = prom::parse(ss.str());
    REQUIRE(r.ok());
    return r;
}

const std::vector<std::string> engine_gauges = {
    "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc"};
const std::vector<std::string> engine_counters = {
    "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total", "vllm:num_preemptions_total",
    "vllm:prompt_tokens_total", "vllm:generation_tokens_total"};

} // namespace

TEST_CASE("replica metrics: vLLM's names and types, each with engine and model_name",
          "[replica_metrics]") {
    replica_metrics m("lanes-tiny", 16, 256);
    const auto r = scrape(m);
    for (const auto& name : engine_gauges) {
        INFO(name);
        CHECK(r.types.at(name) == "gauge");
        REQUIRE(r.find(name) != nullptr);
        CHECK(label_names(*r.find(name)) == std::set<std::string>{"engine", "model_name"});
        CHECK(value_of(r, name, {{"engine", "0"}, {"model_name", "lanes-tiny"}}) == 0.0);
    }
    for (const auto& name : engine_counters) {
        INFO(name);
        CHECK(r.types.at(name) == "counter");
        CHECK(value_of(r, name, {{"engine", "0"}, {"model_name", "lanes-tiny"}}) == 0.0);
    }
    for (const auto* h : {"vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
                          "vllm:e2e_request_latency_seconds", "vllm:request_queue_time_seconds",
                          "vllm:request_prefill_time_seconds"}) {
        INFO(h);
        CHECK(r.types.at(h) == "histogram");
        CHECK(value_of(r, std::string(h) + "_count", {{"model_name", "lanes-tiny"}}) == 0.0);
    }
    // Every finished_reason series exists from the start, at 0.
    CHECK(r.types.at("vllm:request_success_total") == "counter");
    for (const auto* reason : {"stop", "length", "abort", "error"})
        CHECK(value_of(r, "vllm:request_success_total",
                       {{"finished_reason", reason}, {"model_name", "lanes-tiny"}}) == 0.0);
}

TEST_CASE("replica metrics: cache_config_info carries block_size and num_gpu_blocks",
          "[replica_metrics]") {
    replica_metrics m("m", 32, 1234);
    const auto r = scrape(m);
    CHECK(r.types.at("vllm:cache_config_info") == "gauge");
    const prom::sample* info = r.find("vllm:cache_config_info");
    REQUIRE(info != nullptr);
    CHECK(info->value == 1.0);
    CHECK(info->label("block_size") == "32");
    CHECK(info->label("num_gpu_blocks") == "1234");
    CHECK(info->label("enable_prefix_caching") == "True");
    CHECK(info->label("engine") == "0");
    CHECK_FALSE(info->label("model_name")); // as in vLLM: the cache config is not per model
}

TEST_CASE("replica metrics: same HELP, type, labels and buckets as vLLM's own scrape",
          "[replica_metrics]") {
    replica_metrics m("tiny-replica", 16, 8192);
    const auto ours = scrape(m);
    const auto vllm = vllm_fixture();
    std::size_t compared = 0;
    for (const auto& [name, type] : ours.types) {
        if (!vllm.types.contains(name))
            continue; // the queue and prefill time histograms are not in that scrape
        INFO(name);
        ++compared;
        CHECK(vllm.types.at(name) == type);
        CHECK(vllm.help.at(name) == ours.help.at(name));
    }
    CHECK(compared == ours.types.size() - 2);
    for (const auto& s : ours.samples) {
        if (s.name == "vllm:cache_config_info" || !vllm.find(s.name))
            continue; // vLLM's info lists every cache setting; lanes the ones it has
        INFO(s.name);
        std::vector<std::pair<std::string, std::string>> match = s.labels;
        // The same series (le included) exists in vLLM's scrape with the same label names.
        const prom::sample* theirs = vllm.find(s.name, match);
        REQUIRE(theirs != nullptr);
        CHECK(label_names(*theirs) == label_names(s));
    }
    const prom::sample* info = vllm.find("vllm:cache_config_info");
    REQUIRE(info != nullptr);
    for (const auto& [k, v] : ours.find("vllm:cache_config_info")->labels)
        CHECK(info->label(k) == v);
}

TEST_CASE("replica metrics: updates show in the next exposition", "[replica_metrics]") {
    replica_metrics m("m", 16, 256);
    const labels model = {{"model_name", "m"}};
    m.prefix_queries.inc(64);
    m.prefix_hits.inc(48);
    m.prefix_queries.inc(16);
    m.prefix_hits.inc(-5); // counters never go down
    m.generation_tokens.inc();
    m.preemptions.inc(2);
    m.running.set(3);
    m.waiting.set(1);
    m.kv_usage.set(0.25);
    m.success("stop").inc();
    m.success("stop").inc();
    m.success("length").inc();
    m.ttft.observe(0.03); // bucket le=0.04
    const auto r = scrape(m);
    CHECK(value_of(r, "vllm:prefix_cache_queries_total", model) == 80.0);
    CHECK(value_of(r, "vllm:prefix_cache_hits_total", model) == 48.0);
    CHECK(value_of(r, "vllm:generation_tokens_total", model) == 1.0);
    CHECK(value_of(r, "vllm:num_preemptions_total", model) == 2.0);
    CHECK(value_of(r, "vllm:num_requests_running", model) == 3.0);
    CHECK(value_of(r, "vllm:num_requests_waiting", model) == 1.0);
    CHECK(value_of(r, "vllm:kv_cache_usage_perc", model) == 0.25);
    CHECK(value_of(r, "vllm:request_success_total", {{"finished_reason", "stop"}}) == 2.0);
    CHECK(value_of(r, "vllm:request_success_total", {{"finished_reason", "length"}}) == 1.0);
    CHECK(value_of(r, "vllm:request_success_total", {{"finished_reason", "abort"}}) == 0.0);
    const auto ttft = std::string("vllm:time_to_first_token_seconds");
    CHECK(value_of(r, ttft + "_bucket", {{"le", "0.02"}}) == 0.0);
    CHECK(value_of(r, ttft + "_bucket", {{"le", "0.04"}}) == 1.0);
    CHECK(value_of(r, ttft + "_bucket", {{"le", "+Inf"}}) == 1.0);
    CHECK(value_of(r, ttft + "_count") == 1.0);
    CHECK(value_of(r, ttft + "_sum") == Approx(0.03));
    // The handles are the exposed series: reading them back gives the same numbers.
    CHECK(m.prefix_queries.value() == 80.0);
    CHECK(&m.success("stop") == &m.success("stop"));
}

TEST_CASE("replica metrics: families in vLLM's registration order", "[replica_metrics]") {
    replica_metrics m("m", 16, 256);
    const std::string text = m.expose();
    std::size_t last = 0;
    for (const auto* name :
         {"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
          "vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total",
          "vllm:num_preemptions_total", "vllm:prompt_tokens_total", "vllm:generation_tokens_total",
          "vllm:request_success_total", "vllm:time_to_first_token_seconds",
          "vllm:inter_token_latency_seconds", "vllm:e2e_request_latency_seconds",
          "vllm:request_queue_time_seconds", "vllm:request_prefill_time_seconds",
          "vllm:cache_config_info"}) {
        INFO(name);
        const auto at = text.find(std::string("# TYPE ") + name + " ");
        REQUIRE(at != std::string::npos);
        CHECK(at >= last);
        last = at;
    }
}
