// The skewed multi-tenant agent workloads: agents, hot-tenant, bursty (workload.hpp), and the
// replayable trace any workload can be written as.
#include "bench/workload.hpp"
#include "bench/workload_text.hpp"

#include "common/prompt/block_hash.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <unordered_map>

namespace lanes::bench {

namespace {

constexpr std::size_t block_tokens = 16;

std::int64_t uniform(std::mt19937_64& rng, std::int64_t lo, std::int64_t hi) {
    return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

// Zipf(s) weights over ranks 1..n.
std::vector<double> zipf_weights(std::int64_t n, double s) {
    std::vector<double> w;
    for (std::int64_t k = 1; k <= n; ++k)
        w.push_back(std::pow(static_cast<double>(k), -s));
    return w;
}

// Which tenants are on, session by session: each alternates exponential on and off periods
// (means in sessions started), starting in a random phase.
class tenant_bursts {
public:
    tenant_bursts(std::size_t tenants, double on, double off, std::mt19937_64& rng)
        : on_(1.0 / std::max(on, 1.0))
        , off_(1.0 / std::max(off, 1.0))
        , rng_(rng) {
        std::bernoulli_distribution starts_on(on / (on + off));
        for (std::size_t t = 0; t < tenants; ++t) {
            const bool is_on = starts_on(rng_);
            state_.push_back({is_on, period(is_on)});
        }
    }
    // The weights masked to the tenants on at this session (all of them when none is).
    std::vector<double> mask(const std::vector<double>& weights) {
        std::vector<double> out = weights;
        bool any = false;
        for (std::size_t t = 0; t < state_.size(); ++t) {
            if (--state_[t].left <= 0) {
                state_[t].on = !state_[t].on;
                state_[t].left = period(state_[t].on);
            }
            any = any || state_[t].on;
        }
        if (any)
            for (std::size_t t = 0; t < state_.size(); ++t)
                out[t] = state_[t].on ? out[t] : 0.0;
        return out;
    }

private:
    struct tenant_state {
        bool on;
        double left; // sessions until it switches
    };
    double period(bool on) {
        return std::exponential_distribution<double>(on ? on_ : off_)(rng_) + 1.0;
    }
    double on_, off_;
    std::mt19937_64& rng_;
    std::vector<tenant_state> state_;
};

std::string check(const workload_config& c) {
    if (c.skew_requests < 1 || c.tenants < 1 || c.system_blocks_min < 1 || c.turns_min < 1 ||
        c.growth_min < 1 || c.max_prompt < 1 || c.burst_on < 1 || c.burst_off < 1)
        return "--skew-requests, --tenants, --system-blocks-min, --turns-min, --growth-min, "
               "--max-prompt, --burst-on and --burst-off must be at least 1";
    if (c.system_blocks_max < c.system_blocks_min)
        return "--system-blocks-max must be at least --system-blocks-min";
    if (c.turns_max < c.turns_min)
        return "--turns-max must be at least --turns-min";
    if (c.growth_max < c.growth_min)
        return "--growth-max must be at least --growth-min";
    if (c.zipf < 0 || c.hot_share < 0 || c.hot_share > 1 || c.think_time.count() < 0 ||
        c.continue_share < 0 || c.continue_share > 1)
        return "--zipf and --think-time must not be negative, --hot-share and --continue-share "
               "within 0..1";
    if (static_cast<double>(c.system_blocks_max * static_cast<std::int64_t>(block_tokens)) >=
        static_cast<double>(c.max_prompt))
        return "--max-prompt must exceed the longest system prompt (--system-blocks-max x 16)";
    return {};
}

} // namespace

bool is_skewed_workload(const std::string& kind) {
    return kind == "agents" || kind == "hot-tenant" || kind == "bursty";
}

std::vector<stream> skewed_workload(const workload_config& cfg, std::string& error) {
    error = check(cfg);
    if (!error.empty() || !is_skewed_workload(cfg.kind))
        return {};
    std::mt19937_64 rng(static_cast<std::uint64_t>(cfg.seed));
    const auto tenants = static_cast<std::size_t>(cfg.tenants);
    std::vector<std::string> system;
    for (std::size_t t = 0; t < tenants; ++t)
        system.push_back(random_text(rng, static_cast<std::size_t>(uniform(
                                              rng, cfg.system_blocks_min, cfg.system_blocks_max)) *
                                              block_tokens));
    std::vector<double> weights = zipf_weights(cfg.tenants, cfg.zipf);
    if (cfg.kind == "hot-tenant") {
        // Tenant 0 takes hot_share, the others the rest evenly.
        const double rest =
            tenants > 1 ? (1.0 - cfg.hot_share) / static_cast<double>(tenants - 1) : 0.0;
        std::fill(weights.begin(), weights.end(), rest);
        weights[0] = tenants > 1 ? cfg.hot_share : 1.0;
    }
    tenant_bursts bursts(tenants, static_cast<double>(cfg.burst_on),
                         static_cast<double>(cfg.burst_off), rng);
    std::exponential_distribution<double> think(
        cfg.think_time.count() > 0 ? 1000.0 / static_cast<double>(cfg.think_time.count()) : 1.0);
    std::vector<stream> out;
    std::int64_t total = 0;
    for (std::size_t s = 0; total < cfg.skew_requests; ++s) {
        const std::vector<double> w = cfg.kind == "bursty" ? bursts.mask(weights) : weights;
        const auto tenant = std::discrete_distribution<std::size_t>(w.begin(), w.end())(rng);
        const std::int64_t turns =
            std::min(uniform(rng, cfg.turns_min, cfg.turns_max), cfg.skew_requests - total);
        std::string prompt = system[tenant];
        stream session;
        for (std::int64_t t = 0; t < turns; ++t) {
            const auto growth =
                static_cast<std::size_t>(uniform(rng, cfg.growth_min, cfg.growth_max) *
                                         static_cast<std::int64_t>(block_tokens));
            if (t > 0 && prompt.size() + growth + 1 > static_cast<std::size_t>(cfg.max_prompt))
                break; // the next turn would not fit: the session ends
            prompt += random_text(rng, std::min(growth, static_cast<std::size_t>(cfg.max_prompt) -
                                                            1 - prompt.size()));
            request_spec r;
            r.prompt = prompt;
            r.max_tokens = cfg.output_len;
            r.session = "tenant-" + std::to_string(tenant) + "-session-" + std::to_string(s);
            r.think_s = t > 0 && cfg.think_time.count() > 0 ? think(rng) : 0.0;
            session.push_back(std::move(r));
        }
        total += static_cast<std::int64_t>(session.size());
        out.push_back(std::move(session));
    }
    return out;
}

bool write_trace(const std::vector<stream>& workload, const std::string& file, double rate,
                 std::int64_t seed, std::string& error) {
    std::ofstream outf(file);
    if (!outf) {
        error = "cannot write trace file '" + file + "'";
        return false;
    }
    std::mt19937_64 rng(static_cast<std::uint64_t>(seed));
    std::exponential_distribution<double> gap(rate > 0 ? rate : 1.0);
    // A block's id stands for its whole prefix (equal chains of ids, equal prompts).
    std::unordered_map<common::block_hash, std::int64_t> ids;
    struct line {
        double at;
        nlohmann::json row;
    };
    std::vector<line> lines;
    double start = 0;
    for (const auto& s : workload) {
        start += gap(rng);
        double at = start;
        for (const auto& r : s) {
            at += r.think_s;
            nlohmann::json hash_ids = nlohmann::json::array();
            for (const auto h : common::hash_prompt_blocks(r.prompt, block_tokens))
                hash_ids.push_back(
                    ids.try_emplace(h, static_cast<std::int64_t>(ids.size())).first->second);
            if (hash_ids.empty())
                hash_ids.push_back(
                    ids.try_emplace(0, static_cast<std::int64_t>(ids.size())).first->second);
            nlohmann::json row = {{"timestamp", std::llround(at * 1000.0)},
                                  {"input_length", r.prompt.size()},
                                  {"output_length", r.max_tokens},
                                  {"hash_ids", std::move(hash_ids)},
                                  {"block_tokens", block_tokens}};
            if (r.session)
                row["session_id"] = *r.session;
            lines.push_back({at, std::move(row)});
        }
    }
    std::stable_sort(lines.begin(), lines.end(),
                     [](const line& a, const line& b) { return a.at < b.at; });
    for (const auto& l : lines)
        outf << l.row.dump() << "\n";
    outf.close();
    if (!outf) {
        error = "cannot write trace file '" + file + "'";
        return false;
    }
    return true;
}

} // namespace lanes::bench
