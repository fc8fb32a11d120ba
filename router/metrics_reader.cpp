#include "router/metrics_reader.hpp"

#include <charconv>

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

std::optional<std::int64_t> as_int(std::optional<double> v) {
    if (!v)
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

} // namespace

scraped_stats read_replica_metrics(const common::prom::parse_result& p) {
    scraped_stats s;
    s.kv_usage = mean(p, "vllm:kv_cache_usage_perc");
    if (!s.kv_usage)
        s.kv_usage = mean(p, "vllm:gpu_cache_usage_perc");
    if (!s.kv_usage)
        s.kv_usage = mean(p, "sglang:token_usage");
    s.waiting = as_int(first_sum(p, {"vllm:num_requests_waiting", "sglang:num_queue_reqs"}));
    s.running = as_int(first_sum(p, {"vllm:num_requests_running", "sglang:num_running_reqs"}));
    s.prefix_cache_hits =
        first_sum(p, {"vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total"});
    s.prefix_cache_queries =
        first_sum(p, {"vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total"});
    if (const auto* info = p.find("vllm:cache_config_info")) {
        s.num_blocks = label_int(*info, "num_gpu_blocks");
        s.block_size = label_int(*info, "block_size");
    }
    return s;
}

} // namespace lanes::router
