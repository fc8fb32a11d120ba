#include "common/metrics/prom_parser.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <string>

namespace prom = lanes::common::prom;

namespace {

std::string read_fixture(const std::string& name) {
    std::ifstream in(std::string(LANES_SHARED_DIR) + "/fixtures/" + name, std::ios::binary);
    REQUIRE(in.good());
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

double value_of(const prom::parse_result& r, std::string_view name,
                const std::vector<std::pair<std::string, std::string>>& match = {}) {
    const prom::sample* s = r.find(name, match);
    REQUIRE(s != nullptr);
    return s->value;
}

} // namespace

TEST_CASE("parses the vLLM V1 fixture", "[prom]") {
    const auto r = prom::parse(read_fixture("vllm_v1_metrics.txt"));
    REQUIRE(r.ok());
    CHECK(r.samples.size() == 101);
    CHECK(r.types.size() == 25);

    CHECK(value_of(r, "vllm:kv_cache_usage_perc") == 0.0234375);
    CHECK(value_of(r, "vllm:num_requests_running", {{"model_name", "tiny-replica"}}) == 3.0);
    CHECK(value_of(r, "vllm:num_requests_waiting") == 1.0);
    CHECK(value_of(r, "vllm:engine_sleep_state", {{"sleep_state", "awake"}}) == 1.0);
    CHECK(value_of(r, "vllm:engine_sleep_state", {{"sleep_state", "discard_all"}}) == 0.0);

    // Counters and their `_created` siblings stay apart.
    CHECK(r.sum("vllm:prefix_cache_queries_total") == 52311.0);
    CHECK(r.sum("vllm:prefix_cache_hits_total") == 30720.0);
    CHECK(value_of(r, "vllm:prefix_cache_hits_created") == 1.750000012345e+09);
    CHECK(r.types.at("vllm:prefix_cache_queries_total") == "counter");
    CHECK(r.types.at("vllm:prefix_cache_queries_created") == "gauge");
    CHECK(r.help.at("vllm:kv_cache_usage_perc") == "KV-cache usage. 1 means 100 percent usage.");
    CHECK(r.sum("vllm:request_success_total") == 40.0);
    CHECK(value_of(r, "vllm:request_success_total", {{"finished_reason", "length"}}) == 15.0);
    CHECK_FALSE(r.sum("vllm:gpu_cache_usage_perc").has_value());

    // Histogram samples.
    CHECK(r.types.at("vllm:time_to_first_token_seconds") == "histogram");
    std::size_t buckets = 0;
    for (const auto& s : r.samples)
        buckets += s.name == "vllm:time_to_first_token_seconds_bucket" ? 1 : 0;
    CHECK(buckets == 23);
    const std::string ttft = "vllm:time_to_first_token_seconds_bucket";
    CHECK(value_of(r, ttft, {{"le", "0.02"}}) == 25.0);
    CHECK(value_of(r, ttft, {{"le", "1.0"}}) == 40.0);
    CHECK(value_of(r, ttft, {{"le", "+Inf"}, {"engine", "0"}}) == 40.0);
    CHECK(value_of(r, "vllm:time_to_first_token_seconds_count") == 40.0);
    CHECK(value_of(r, "vllm:time_to_first_token_seconds_sum") == 0.7812);
    CHECK(value_of(r, "vllm:inter_token_latency_seconds_sum") == 14.9);
    CHECK(r.find(ttft, {{"le", "0.03"}}) == nullptr);

    // An info-style gauge with many labels.
    const prom::sample* info = r.find("vllm:cache_config_info");
    REQUIRE(info != nullptr);
    CHECK(info->labels.size() == 14);
    CHECK(info->label("block_size") == "16");
    CHECK(info->label("num_gpu_blocks") == "8192");
    CHECK(info->label("num_gpu_blocks_override") == "None");
    CHECK(info->label("gpu_memory_utilization") == "0.9");
    CHECK_FALSE(info->label("model_name").has_value());
    CHECK(info->value == 1.0);
}

TEST_CASE("parses vLLM V0 samples", "[prom]") {
    const auto r = prom::parse(
        "# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.\n"
        "# TYPE vllm:gpu_cache_usage_perc gauge\n"
        "vllm:gpu_cache_usage_perc{model_name=\"meta-llama/Llama-3.1-8B\"} 0.5\n"
        "# HELP vllm:gpu_prefix_cache_hits_total GPU prefix cache hits, in terms of tokens.\n"
        "# TYPE vllm:gpu_prefix_cache_hits_total counter\n"
        "vllm:gpu_prefix_cache_hits_total{model_name=\"meta-llama/Llama-3.1-8B\"} 100.0\n"
        "# TYPE vllm:gpu_prefix_cache_queries_total counter\n"
        "vllm:gpu_prefix_cache_queries_total{model_name=\"meta-llama/Llama-3.1-8B\"} 400.0\n"
        "# HELP vllm:gpu_prefix_cache_hit_rate GPU prefix cache block hit rate.\n"
        "# TYPE vllm:gpu_prefix_cache_hit_rate gauge\n"
        "vllm:gpu_prefix_cache_hit_rate{model_name=\"meta-llama/Llama-3.1-8B\"} 0.25\n"
        "vllm:num_requests_running{model_name=\"meta-llama/Llama-3.1-8B\"} 2.0\n");
    REQUIRE(r.ok());
    REQUIRE(r.samples.size() == 5);
    CHECK(r.sum("vllm:gpu_cache_usage_perc") == 0.5);
    CHECK(r.sum("vllm:gpu_prefix_cache_hits_total") == 100.0);
    CHECK(r.sum("vllm:gpu_prefix_cache_queries_total") == 400.0);
    CHECK(value_of(r, "vllm:gpu_prefix_cache_hit_rate",
                   {{"model_name", "meta-llama/Llama-3.1-8B"}}) == 0.25);
    CHECK(r.samples[3].labels.size() == 1);
    CHECK_FALSE(r.samples[3].label("engine").has_value());
    CHECK(r.types.at("vllm:gpu_prefix_cache_hits_total") == "counter");
    CHECK(r.types.count("vllm:num_requests_running") == 0);
    CHECK(r.find("vllm:gpu_prefix_cache_hits_created") == nullptr);
}

TEST_CASE("parses SGLang samples", "[prom]") {
    const auto r = prom::parse("# HELP sglang:token_usage The token usage\n"
                               "# TYPE sglang:token_usage gauge\n"
                               "sglang:token_usage{model_name=\"Qwen/Qwen2.5-7B\"} 0.28\n"
                               "# HELP sglang:num_running_reqs The number of running requests\n"
                               "# TYPE sglang:num_running_reqs gauge\n"
                               "sglang:num_running_reqs{model_name=\"Qwen/Qwen2.5-7B\"} 3.0\n"
                               "# HELP sglang:num_queue_reqs The number of requests in the queue\n"
                               "# TYPE sglang:num_queue_reqs gauge\n"
                               "sglang:num_queue_reqs{model_name=\"Qwen/Qwen2.5-7B\"} 0.0\n"
                               "# HELP sglang:cache_hit_rate The cache hit rate\n"
                               "# TYPE sglang:cache_hit_rate gauge\n"
                               "sglang:cache_hit_rate{model_name=\"Qwen/Qwen2.5-7B\"} 0.0625\n");
    REQUIRE(r.ok());
    const std::vector<std::pair<std::string, std::string>> model = {
        {"model_name", "Qwen/Qwen2.5-7B"}};
    CHECK(value_of(r, "sglang:token_usage", model) == 0.28);
    CHECK(value_of(r, "sglang:num_running_reqs", model) == 3.0);
    CHECK(value_of(r, "sglang:num_queue_reqs", model) == 0.0);
    CHECK(value_of(r, "sglang:cache_hit_rate", model) == 0.0625);
    CHECK(r.find("sglang:token_usage", {{"model_name", "other"}}) == nullptr);
    CHECK(r.help.at("sglang:num_queue_reqs") == "The number of requests in the queue");
}

TEST_CASE("label values with escapes, commas and braces", "[prom]") {
    const auto r = prom::parse("a{path=\"C:\\\\dir\",q=\"say \\\"hi\\\"\",nl=\"x\\ny\"} 1\n"
                               "b{v=\"a,b}{c=\\\"d\\\"\",w=\"#\"} 2\n"
                               "c{v=\"bad \\t escape\"} 3\n"
                               "d{} 4\n");
    REQUIRE(r.ok());
    REQUIRE(r.samples.size() == 4);
    CHECK(r.samples[0].label("path") == "C:\\dir");
    CHECK(r.samples[0].label("q") == "say \"hi\"");
    CHECK(r.samples[0].label("nl") == "x\ny");
    CHECK(r.samples[1].label("v") == "a,b}{c=\"d\"");
    CHECK(r.samples[1].label("w") == "#");
    CHECK(r.samples[1].value == 2.0);
    CHECK(r.samples[2].label("v") == "bad \\t escape");
    CHECK(r.samples[3].labels.empty());
    CHECK(r.samples[3].value == 4.0);
}

TEST_CASE("whitespace, trailing commas, CRLF, comments and EOF", "[prom]") {
    const auto r = prom::parse("\n"
                               "   \t\n"
                               "# a free comment\n"
                               "#no space comment\n"
                               "# HELP  spaced   Two spaces \\\\ before\\n.\n"
                               "# HELP empty_help\n"
                               "# TYPE spaced gauge \r\n"
                               "  spaced  {  a = \"1\" ,  b=\"2\" , }   7   \r\n"
                               "trailing{a=\"1\",} 8\n"
                               "\tplain\t9\n"
                               "# EOF\n"
                               "after_eof 10\n");
    REQUIRE(r.ok());
    REQUIRE(r.samples.size() == 3);
    CHECK(r.samples[0].name == "spaced");
    CHECK(r.samples[0].labels ==
          std::vector<std::pair<std::string, std::string>>{{"a", "1"}, {"b", "2"}});
    CHECK(r.samples[0].value == 7.0);
    CHECK(r.samples[1].label("a") == "1");
    CHECK(r.samples[2].value == 9.0);
    CHECK(r.types.at("spaced") == "gauge");
    CHECK(r.help.at("spaced") == "Two spaces \\ before\n."); // blanks after the name skipped
    CHECK(r.help.at("empty_help").empty());
    CHECK(r.find("after_eof") == nullptr);
}

TEST_CASE("special values and exponent forms", "[prom]") {
    const auto r = prom::parse("a +Inf\nb -Inf\nc NaN\nd Inf\ne 1.5e+03\nf -0.5E-2\n"
                               "g 1.750000012345e+09\nh 1e-05\ni -0\nj 1e999\n");
    REQUIRE(r.ok());
    REQUIRE(r.samples.size() == 10);
    const double inf = std::numeric_limits<double>::infinity();
    CHECK(r.samples[0].value == inf);
    CHECK(r.samples[1].value == -inf);
    CHECK(std::isnan(r.samples[2].value));
    CHECK(r.samples[3].value == inf);
    CHECK(r.samples[4].value == 1500.0);
    CHECK(r.samples[5].value == -0.005);
    CHECK(r.samples[6].value == 1750000012.345);
    CHECK(r.samples[7].value == 1e-05);
    CHECK(r.samples[8].value == 0.0);
    CHECK(r.samples[9].value == inf);
    CHECK(std::isnan(*r.sum("c")));
}

TEST_CASE("timestamps and exemplars are skipped", "[prom]") {
    const auto r = prom::parse("with_ts 1 1700000000000\n"
                               "with_float_ts{a=\"x\"} 2 1.7e9\n"
                               "negative_ts 3 -5\n"
                               "h_bucket{le=\"0.5\"} 4 # {trace_id=\"abc\",span=\"}\"} 0.4 1.7e9\n"
                               "c_total 5 1700000000000 # {trace_id=\"x\"} 1\n"
                               "tight_bucket{le=\"1\"} 6 #{trace_id=\"y\"} 0.9\n");
    REQUIRE(r.ok());
    REQUIRE(r.samples.size() == 6);
    for (std::size_t i = 0; i < r.samples.size(); ++i)
        CHECK(r.samples[i].value == double(i + 1));
    CHECK(r.samples[3].labels.size() == 1);
    CHECK(r.samples[3].label("le") == "0.5");
}

TEST_CASE("_created and _total series stay distinct", "[prom]") {
    const auto r = prom::parse("# TYPE x counter\n"
                               "x_total{engine=\"0\"} 10\n"
                               "x_total{engine=\"1\"} 5\n"
                               "x_created{engine=\"0\"} 1.7e9\n"
                               "x_created{engine=\"1\"} 1.7e9\n");
    REQUIRE(r.ok());
    CHECK(r.sum("x_total") == 15.0);
    CHECK(r.sum("x_created") == 3.4e9);
    CHECK(value_of(r, "x_total", {{"engine", "1"}}) == 5.0);
    CHECK_FALSE(r.sum("x").has_value());
    CHECK(r.types.at("x") == "counter");
}

TEST_CASE("a malformed line records an error and parsing goes on", "[prom]") {
    const char* const bad_lines[] = {
        "foo{a=\"1\" 1", "foo{a=\"1\"",
        "foo 1 2 3",     "foo abc",
        "foo",           "foo{1a=\"x\"} 1",
        "{a=\"b\"} 1",   "foo{a=b} 1",
        "foo{a=\"x\\",   "foo{a \"x\"} 1",
        "foo 1 abc",     "foo - 1",
        "foo ++1",       "foo{a=\"1\"}{b=\"2\"} 1",
        "# TYPE",        "# HELP 9bad text",
        "# TYPE foo",    "# TYPE foo gauge extra",
        "\x01\xff\xfe",  "foo-bar 1",
    };
    for (const char* bad : bad_lines) {
        INFO("bad line: " << bad);
        const auto r = prom::parse(std::string("good 1\n") + bad + "\nafter 2\n");
        CHECK_FALSE(r.ok());
        CHECK_FALSE(r.error.empty());
        CHECK(r.error_line == 2);
        CHECK(r.sum("good") == 1.0);
        CHECK(r.sum("after") == 2.0);
    }

    const auto r = prom::parse("ok 1\nbad_one x\nok 2\nbad_two y\nok 3");
    CHECK(r.error_line == 2);
    CHECK(r.error.find("bad_one") != std::string::npos);
    CHECK(r.sum("ok") == 6.0);
}

TEST_CASE("empty input and lookups on nothing", "[prom]") {
    const auto r = prom::parse("");
    CHECK(r.ok());
    CHECK(r.samples.empty());
    CHECK_FALSE(r.sum("x").has_value());
    CHECK(r.find("x") == nullptr);
    const auto last = prom::parse("no_newline 42");
    REQUIRE(last.samples.size() == 1);
    CHECK(last.samples[0].value == 42.0);
}
