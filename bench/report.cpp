#include "bench/report.hpp"

#include "bench/stats.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <sstream>

namespace lanes::bench {

namespace {

nlohmann::json to_json(const summary& s) {
    return {{"count", s.count}, {"mean", s.mean}, {"p50", s.p50},
            {"p90", s.p90},     {"p99", s.p99},   {"max", s.max}};
}

// Errors grouped by their first word ("connect:", "status 503", ...).
std::string error_kind(const std::string& error) {
    const auto colon = error.find(':');
    return colon == std::string::npos ? error : error.substr(0, colon);
}

} // namespace

nlohmann::json make_report(const bench_config& cfg, const run_context& ctx,
                           const std::vector<request_record>& records, double wall_seconds) {
    std::vector<double> ttft, itl, e2e, tpot, lag;
    std::int64_t ok = 0, in_tokens = 0, out_tokens = 0;
    std::map<std::string, std::int64_t> errors;
    std::map<std::string, std::int64_t> per_replica;
    std::map<std::string, std::int64_t> per_replica_tokens;
    for (const auto& name : ctx.replicas) {
        per_replica[name] = 0;
        per_replica_tokens[name] = 0;
    }
    nlohmann::json timeline = nlohmann::json::array();
    for (const auto& r : records) {
        timeline.push_back({r.start_s, r.e2e, r.error.empty() ? "" : error_kind(r.error)});
        if (r.scheduled_s >= 0)
            lag.push_back(std::max(0.0, r.start_s - r.scheduled_s));
        if (!r.error.empty()) {
            ++errors[error_kind(r.error)];
            continue;
        }
        ++ok;
        ttft.push_back(r.ttft);
        e2e.push_back(r.e2e);
        itl.insert(itl.end(), r.itl.begin(), r.itl.end());
        // Time per output token after the first, per request (vLLM's TPOT): unlike the gaps
        // between events, it does not depend on how many tokens an event carries.
        if (r.completion_tokens > 1)
            tpot.push_back((r.e2e - r.ttft) / static_cast<double>(r.completion_tokens - 1));
        in_tokens += r.prompt_tokens;
        out_tokens += r.completion_tokens;
        const std::string replica = r.replica.empty() ? "(direct)" : r.replica;
        ++per_replica[replica];
        per_replica_tokens[replica] += r.prompt_tokens + r.completion_tokens;
    }
    double max_count = 0, mean_count = 0;
    for (const auto& [name, count] : per_replica) {
        max_count = std::max(max_count, static_cast<double>(count));
        mean_count += static_cast<double>(count);
    }
    if (!per_replica.empty())
        mean_count /= static_cast<double>(per_replica.size());
    const double wall = wall_seconds > 0 ? wall_seconds : 1e-9;
    nlohmann::json hit = {{"ideal", ctx.ideal_hit_rate}, {"measured", nullptr}};
    if (ctx.counters_before && ctx.counters_after) {
        const double hits = ctx.counters_after->first - ctx.counters_before->first;
        const double queries = ctx.counters_after->second - ctx.counters_before->second;
        hit["hit_tokens"] = hits;
        hit["query_tokens"] = queries;
        hit["measured"] = queries > 0 ? nlohmann::json(hits / queries) : nlohmann::json(nullptr);
    }
    const auto& w = ctx.workload;
    return {
        {"config",
         {{"url", cfg.url},
          {"workload", w.kind},
          {"concurrency", cfg.concurrency},
          {"rate", cfg.rate},
          {"trace_times", cfg.trace_times},
          {"seed", w.seed},
          {"groups", w.groups},
          {"prompts_per_group", w.prompts_per_group},
          {"system_len", w.system_len},
          {"question_len", w.question_len},
          {"sessions", w.sessions},
          {"turns", w.turns},
          {"turn_len", w.turn_len},
          {"requests", w.requests},
          {"input_len", w.input_len},
          {"output_len", w.output_len},
          {"trace_file", w.trace_file},
          {"time_scale", w.time_scale},
          {"length_scale", w.length_scale}}},
        {"prefix_cache_hit_rate", hit},
        {"completed", ok},
        {"failed", static_cast<std::int64_t>(records.size()) - ok},
        {"errors", errors},
        {"duration_s", wall_seconds},
        {"request_throughput", static_cast<double>(ok) / wall},
        {"input_token_throughput", static_cast<double>(in_tokens) / wall},
        {"output_token_throughput", static_cast<double>(out_tokens) / wall},
        {"ttft_s", to_json(summarize(ttft))},
        {"itl_s", to_json(summarize(itl))},
        {"tpot_s", to_json(summarize(tpot))},
        // Open loop: how late each arrival went out against its schedule; a large p99 means
        // the client, not the server, shaped the arrivals.
        {"arrival_lag_s", to_json(summarize(lag))},
        {"e2e_s", to_json(summarize(e2e))},
        {"per_replica", per_replica},
        {"per_replica_tokens", per_replica_tokens},
        // [start_s, e2e_s, error kind or ""] per request, for throughput-over-time charts
        {"timeline", timeline},
        {"imbalance", mean_count > 0 ? max_count / mean_count : 0.0},
    };
}

std::string describe(const nlohmann::json& r) {
    std::ostringstream out;
    out << r["completed"].get<std::int64_t>() << " ok, " << r["failed"].get<std::int64_t>()
        << " failed in " << r["duration_s"].get<double>()
        << " s: " << r["request_throughput"].get<double>() << " req/s, "
        << r["output_token_throughput"].get<double>() << " output tok/s; TTFT p50 "
        << r["ttft_s"]["p50"].get<double>() * 1000 << " ms, p99 "
        << r["ttft_s"]["p99"].get<double>() * 1000 << " ms; imbalance "
        << r["imbalance"].get<double>() << "; prefix-cache hit rate "
        << (r["prefix_cache_hit_rate"]["measured"].is_null()
                ? std::string("n/a")
                : std::to_string(r["prefix_cache_hit_rate"]["measured"].get<double>()))
        << " (ideal " << r["prefix_cache_hit_rate"]["ideal"].get<double>() << ")";
    return out.str();
}

} // namespace lanes::bench
