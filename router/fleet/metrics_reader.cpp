#include "router/fleet/metrics_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace lanes::router {

namespace {

// Mean of all samples with this name (several engines of one server), or nullopt.
std::optional<double> mean(const common::prom::parse_result& p, std::string_view name) {
    double sum = 0;
    int n = 0;
    for (const auto& s : p.samples)
        if (s.name == name) {
            sum += s.value;
            ++n;
        }
    if (n == 0)
        return std::nullopt;
    return sum / n;
}

std::optional<double> first_sum(const common::prom::parse_result& p,
                                std::initializer_list<std::string_view> names) {
    for (const auto name : names)
        if (auto v = p.sum(name))
            return v;
    return std::nullopt;
}

// A value the router can use: NaN, an infinity (a broken exporter) or a negative count is as
// good as none, and would otherwise poison every load score it enters.
std::optional<double> usable(std::optional<double> v) {
    if (!v || !std::isfinite(*v) || *v < 0)
        return std::nullopt;
    return v;
}

std::optional<std::int64_t> as_int(std::optional<double> v) {
    v = usable(v);
    if (!v || *v > 1e15)
        return std::nullopt;
    return static_cast<std::int64_t>(*v + 0.5);
}

std::optional<std::int64_t> label_int(const common::prom::sample& s, std::string_view key) {
    const auto text = s.label(key);
    if (!text)
        return std::nullopt;
    std::int64_t value = 0;
    auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), value);
    if (ec != std::errc{} || ptr != text->data() + text->size())
        return std::nullopt;
    return value;
}

// The port of a tcp:// endpoint a replica announces, or nullopt.
std::optional<unsigned short> endpoint_port(const common::prom::sample& s, std::string_view key) {
    const auto text = s.label(key);
    if (!text || !text->starts_with("tcp://"))
        return std::nullopt;
    const auto colon = text->rfind(':');
    unsigned port = 0;
    const char* end = text->data() + text->size();
    auto [ptr, ec] = std::from_chars(text->data() + colon + 1, end, port);
    if (ec != std::errc{} || ptr != end || port == 0 || port > 65535)
        return std::nullopt;
    return static_cast<unsigned short>(port);
}

} // namespace

scraped_stats read_replica_metrics(const common::prom::parse_result& p) {
    scraped_stats s;
    s.kv_usage = mean(p, "vllm:kv_cache_usage_perc");
    if (!s.kv_usage)
        s.kv_usage = mean(p, "vllm:gpu_cache_usage_perc");
    if (!s.kv_usage)
        s.kv_usage = mean(p, "sglang:token_usage");
    s.kv_usage = usable(s.kv_usage);
    if (s.kv_usage)
        s.kv_usage = std::min(*s.kv_usage, 1.0);
    s.waiting = as_int(first_sum(p, {"vllm:num_requests_waiting", "sglang:num_queue_reqs"}));
    s.running = as_int(first_sum(p, {"vllm:num_requests_running", "sglang:num_running_reqs"}));
    s.prefix_cache_hits =
        usable(first_sum(p, {"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"}));
    s.prefix_cache_queries = usable(
        first_sum(p, {"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"}));
    // The prefill cost model's inputs (vLLM V1 and lanes replicas).
    s.prefill_seconds = usable(p.sum("vllm:request_prefill_time_seconds_sum"));
    s.prefills = usable(p.sum("vllm:request_prefill_time_seconds_count"));
    s.prompt_tokens = usable(p.sum("vllm:prompt_tokens_total"));
    s.finished = usable(p.sum("vllm:request_success_total"));
    // One info sample per engine: a server with several (vLLM's internal data parallelism)
    // caches in all of them, so their blocks add up.
    for (const auto& sample : p.samples) {
        if (sample.name != "vllm:cache_config_info")
            continue;
        // Bounded, and summed without overflow: a replica's word is not trusted past reason.
        if (const auto blocks = label_int(sample, "num_gpu_blocks"); blocks && *blocks > 0)
            s.num_blocks = std::min(s.num_blocks.value_or(0) + std::min(*blocks, max_num_blocks),
                                    max_num_blocks);
        if (const auto size = label_int(sample, "block_size");
            !s.block_size && size && *size > 0 && *size <= max_block_size)
            s.block_size = size;
    }
    for (const auto& sample : p.samples) {
        if (sample.name != "lanes_replica_scheduler_info" || sample.value != 1)
            continue;
        if (const auto n = label_int(sample, "max_num_seqs"); n && *n > 0 && *n <= max_num_seqs)
            s.max_num_seqs = n;
        break;
    }
    for (const auto& sample : p.samples) {
        if (sample.name != "lanes_replica_kv_events_info" || sample.value != 1)
            continue;
        s.kv_events_port = endpoint_port(sample, "endpoint");
        s.kv_replay_port = endpoint_port(sample, "replay_endpoint");
        break;
    }
    return s;
}

} // namespace lanes::router
