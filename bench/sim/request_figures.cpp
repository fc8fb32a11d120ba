#include "bench/sim/request_figures.hpp"

#include "bench/stats.hpp"

#include <algorithm>
#include <cstdint>

namespace lanes::bench::sim {

namespace {

// lanes-bench's summary, with p95 (the DP x TP comparison's latency figure).
nlohmann::json to_json(std::vector<double> samples) {
    const summary s = summarize(samples);
    std::sort(samples.begin(), samples.end());
    const double p95 = samples.empty() ? 0.0 : percentile(samples, 0.95);
    return {{"count", s.count}, {"mean", s.mean}, {"p50", s.p50}, {"p90", s.p90},
            {"p95", p95},       {"p99", s.p99},   {"max", s.max}};
}

} // namespace

nlohmann::json latency_figures(const std::vector<request_state>& requests, double duration_s) {
    std::vector<double> ttft, e2e, tpot;
    std::int64_t in_tokens = 0, out_tokens = 0, done = 0;
    for (const auto& st : requests) {
        if (st.end < 0)
            continue;
        ++done;
        ttft.push_back(st.first - st.sent);
        e2e.push_back(st.end - st.sent);
        if (st.output_tokens > 1)
            tpot.push_back((st.end - st.first) / static_cast<double>(st.output_tokens - 1));
        in_tokens += static_cast<std::int64_t>(st.prompt_tokens);
        out_tokens += static_cast<std::int64_t>(st.output_tokens);
    }
    return {{"completed", done},
            {"failed", static_cast<std::int64_t>(requests.size()) - done},
            {"duration_s", duration_s},
            {"request_throughput", static_cast<double>(done) / duration_s},
            {"input_token_throughput", static_cast<double>(in_tokens) / duration_s},
            {"output_token_throughput", static_cast<double>(out_tokens) / duration_s},
            {"ttft_s", to_json(std::move(ttft))},
            {"tpot_s", to_json(std::move(tpot))},
            {"e2e_s", to_json(std::move(e2e))}};
}

nlohmann::json request_rows(const std::vector<request_state>& requests, const decision_log& log) {
    auto rows = nlohmann::json::array();
    for (std::size_t id = 0; id < requests.size(); ++id) {
        const auto& st = requests[id];
        nlohmann::json row = {{"id", id},
                              {"stream", st.stream},
                              {"sent_s", st.sent},
                              {"replica", st.replica},
                              {"prompt_tokens", st.prompt_tokens},
                              {"ttft_s", st.first >= 0 ? st.first - st.sent : -1.0},
                              {"e2e_s", st.end >= 0 ? st.end - st.sent : -1.0}};
        log.add_row_fields(id, row);
        rows.push_back(std::move(row));
    }
    return rows;
}

} // namespace lanes::bench::sim
