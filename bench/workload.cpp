#include "bench/workload.hpp"

#include "bench/workload_text.hpp"

#include "common/config_util.hpp"
#include "common/openai/chat_template.hpp"
#include "common/prompt/block_hash.hpp"
#include "common/prompt/tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <optional>
#include <random>
#include <string_view>
#include <unordered_set>

namespace lanes::bench {

std::string random_text(std::mt19937_64& rng, std::size_t n) {
    static constexpr char alphabet[] = "abcdefghijklmnopqrstuvwxyz      ABCDEFGHIJ.,";
    std::string s(n, ' ');
    for (auto& c : s)
        c = alphabet[rng() % (sizeof alphabet - 1)];
    return s;
}

namespace {

constexpr std::size_t mooncake_block_tokens = 512;

std::vector<stream> shared_prefix(const workload_config& cfg) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(cfg.seed));
    std::vector<stream> out;
    for (std::int64_t g = 0; g < cfg.groups; ++g) {
        const std::string system = random_text(rng, static_cast<std::size_t>(cfg.system_len));
        for (std::int64_t q = 0; q < cfg.prompts_per_group; ++q) {
            request_spec r;
            r.prompt = system + random_text(rng, static_cast<std::size_t>(cfg.question_len));
            r.max_tokens = cfg.output_len;
            if (cfg.session_per_group)
                r.session = "group-" + std::to_string(g);
            out.push_back({std::move(r)});
        }
    }
    std::shuffle(out.begin(), out.end(), rng);
    return out;
}

std::vector<stream> multi_turn(const workload_config& cfg) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(cfg.seed));
    std::vector<stream> out;
    for (std::int64_t s = 0; s < cfg.sessions; ++s) {
        std::vector<common::chat_message> conversation = {
            {"system", random_text(rng, static_cast<std::size_t>(cfg.turn_len))}};
        stream turns;
        for (std::int64_t t = 0; t < cfg.turns; ++t) {
            conversation.push_back(
                {"user", random_text(rng, static_cast<std::size_t>(cfg.turn_len))});
            request_spec r;
            r.prompt = common::render_chat(conversation);
            r.max_tokens = cfg.output_len;
            r.session = "session-" + std::to_string(s);
            turns.push_back(std::move(r));
            conversation.push_back(
                {"assistant", random_text(rng, static_cast<std::size_t>(cfg.output_len))});
        }
        out.push_back(std::move(turns));
    }
    return out;
}

std::vector<stream> random_requests(const workload_config& cfg) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(cfg.seed));
    std::vector<stream> out;
    for (std::int64_t i = 0; i < cfg.requests; ++i)
        out.push_back({request_spec{random_text(rng, static_cast<std::size_t>(cfg.input_len)),
                                    cfg.output_len, std::nullopt, -1.0}});
    return out;
}

// One block of a trace: the same id always gives the same bytes.
std::string trace_block(std::int64_t id, std::size_t size, std::int64_t seed) {
    std::mt19937_64 rng(static_cast<std::uint64_t>(id) * 0x9e3779b97f4a7c15ULL ^
                        static_cast<std::uint64_t>(seed));
    return random_text(rng, size);
}

std::vector<stream> trace(const workload_config& cfg, std::string& error) {
    std::ifstream in(cfg.trace_file);
    if (!in) {
        error = "cannot read trace file '" + cfg.trace_file + "'";
        return {};
    }
    std::vector<stream> out;
    std::size_t line_no = 0;
    for (std::string line; std::getline(in, line);) {
        ++line_no;
        if (line.empty())
            continue;
        const auto j = nlohmann::json::parse(line, nullptr, false);
        // Numbers where numbers belong, and whole non-negative block ids: a wrong type must be
        // a clear message, not an exception out of the JSON library.
        const auto number = [&j](const char* key) {
            return j.contains(key) && j[key].is_number() && j[key].get<double>() >= 0;
        };
        const bool ids_ok = j.is_object() && j.contains("hash_ids") && j["hash_ids"].is_array() &&
                            !j["hash_ids"].empty() &&
                            std::all_of(j["hash_ids"].begin(), j["hash_ids"].end(),
                                        [](const auto& id) { return id.is_number_integer(); });
        if (j.is_discarded() || !j.is_object() || !number("timestamp") || !number("input_length") ||
            !number("output_length") || !ids_ok) {
            error = cfg.trace_file + ":" + std::to_string(line_no) +
                    ": expected numbers timestamp, input_length, output_length (>= 0) and a "
                    "non-empty array of integer hash_ids";
            return {};
        }
        // Mooncake's blocks are 512 tokens; a trace lanes-bench wrote says its own.
        const bool sized = j.contains("block_tokens") && j["block_tokens"].is_number_integer() &&
                           j["block_tokens"].get<std::int64_t>() > 0;
        const double block_tokens =
            sized ? j["block_tokens"].get<double>() : static_cast<double>(mooncake_block_tokens);
        const auto block =
            static_cast<std::size_t>(std::max(1.0, std::round(block_tokens * cfg.length_scale)));
        const auto input = static_cast<std::size_t>(
            std::max(1.0, std::round(j["input_length"].get<double>() * cfg.length_scale)));
        std::string prompt;
        for (const auto& id : j["hash_ids"]) {
            if (prompt.size() >= input)
                break;
            prompt += trace_block(id.get<std::int64_t>(), block, cfg.seed);
        }
        prompt.resize(input, ' ');
        request_spec r;
        r.prompt = std::move(prompt);
        r.max_tokens = std::max<std::int64_t>(
            1, std::llround(j["output_length"].get<double>() * cfg.length_scale));
        r.arrival_s = j["timestamp"].get<double>() / 1000.0 * cfg.time_scale;
        if (j.contains("session_id") && j["session_id"].is_string())
            r.session = j["session_id"].get<std::string>();
        out.push_back({std::move(r)});
        if (cfg.trace_limit > 0 && static_cast<std::int64_t>(out.size()) >= cfg.trace_limit)
            break;
    }
    return out;
}

// "2023-11-16 18:17:03.9799600" -> seconds since midnight (the trace spans one day).
std::optional<double> azure_time(std::string_view t) {
    if (t.size() < 19 || t[10] != ' ' || t[13] != ':' || t[16] != ':')
        return std::nullopt;
    const auto num = [&](std::size_t at, std::size_t len) -> std::optional<double> {
        double v = 0;
        for (std::size_t i = at; i < at + len; ++i) {
            if (t[i] < '0' || t[i] > '9')
                return std::nullopt;
            v = v * 10 + (t[i] - '0');
        }
        return v;
    };
    const auto h = num(11, 2), m = num(14, 2), s = num(17, 2);
    if (!h || !m || !s)
        return std::nullopt;
    double frac = 0, scale = 0.1;
    if (t.size() > 19) {
        if (t[19] != '.')
            return std::nullopt;
        for (std::size_t i = 20; i < t.size(); ++i, scale /= 10) {
            if (t[i] < '0' || t[i] > '9')
                return std::nullopt;
            frac += (t[i] - '0') * scale;
        }
    }
    return *h * 3600 + *m * 60 + *s + frac;
}

std::vector<stream> azure_trace(const workload_config& cfg, std::string& error) {
    std::ifstream in(cfg.trace_file);
    if (!in) {
        error = "cannot read trace file '" + cfg.trace_file + "'";
        return {};
    }
    std::mt19937_64 rng(static_cast<std::uint64_t>(cfg.seed));
    std::vector<stream> out;
    std::optional<double> first;
    std::size_t line_no = 0;
    const auto whole = [](std::string_view s, std::int64_t& v) {
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        return ec == std::errc{} && end == s.data() + s.size() && v >= 0;
    };
    for (std::string line; std::getline(in, line);) {
        ++line_no;
        if (!line.empty() && line.back() == '\r')
            line.pop_back();
        if (line.empty() || (line_no == 1 && line.starts_with("TIMESTAMP")))
            continue;
        const std::string_view l(line);
        const auto c1 = l.find(',');
        const auto c2 = c1 == std::string_view::npos ? c1 : l.find(',', c1 + 1);
        std::int64_t context = -1, generated = -1;
        const auto at = c1 == std::string_view::npos ? std::nullopt : azure_time(l.substr(0, c1));
        if (c2 == std::string_view::npos || !at || !whole(l.substr(c1 + 1, c2 - c1 - 1), context) ||
            !whole(l.substr(c2 + 1), generated)) {
            error = cfg.trace_file + ":" + std::to_string(line_no) +
                    ": expected TIMESTAMP (YYYY-MM-DD HH:MM:SS[.frac]), ContextTokens, "
                    "GeneratedTokens (whole numbers >= 0)";
            return {};
        }
        if (!first)
            first = *at;
        request_spec r;
        const double len = std::round(static_cast<double>(context) * cfg.length_scale);
        r.prompt = random_text(rng, static_cast<std::size_t>(std::max(1.0, len)));
        r.max_tokens = std::max<std::int64_t>(
            1, std::llround(static_cast<double>(generated) * cfg.length_scale));
        r.arrival_s = std::max(0.0, *at - *first) * cfg.time_scale;
        out.push_back({std::move(r)});
        if (cfg.trace_limit > 0 && static_cast<std::int64_t>(out.size()) >= cfg.trace_limit)
            break;
    }
    return out;
}

} // namespace

void add_workload_flags(common::flag_set& f, workload_config& w) {
    f.section("Workload");
    f.add("workload", w.kind, "the requests sent: generated, or replayed from a trace")
        .value_name("NAME")
        .choices({"shared-prefix", "multi-turn", "agents", "hot-tenant", "bursty", "trace", "azure",
                  "random"});
    f.add("seed", w.seed, "seed for the workload and arrivals").value_name("NUMBER");
    f.add("output-len", w.output_len, "max_tokens per request (not for trace)")
        .value_name("TOKENS");

    f.section("Shared-prefix workload");
    f.add("groups", w.groups, "groups (system prompts)");
    f.add("prompts-per-group", w.prompts_per_group, "questions per group");
    f.add("system-len", w.system_len, "system prompt length").value_name("BYTES");
    f.add("question-len", w.question_len, "question length").value_name("BYTES");
    f.add("session-per-group", w.session_per_group, "x-session-id per group");

    f.section("Multi-turn workload");
    f.add("sessions", w.sessions, "conversations");
    f.add("turns", w.turns, "turns per conversation");
    f.add("turn-len", w.turn_len, "user text per turn").value_name("BYTES");

    f.section("Random workload");
    f.add("requests", w.requests, "requests");
    f.add("input-len", w.input_len, "prompt length").value_name("BYTES");

    f.section("Trace and azure workloads");
    f.add("trace", w.trace_file, "trace: Mooncake-format JSONL file; azure: Azure LLM trace CSV")
        .value_name("PATH");
    f.add("time-scale", w.time_scale, "multiply timestamps by this");
    f.add("length-scale", w.length_scale, "multiply lengths (and the trace's 512-token blocks)");
    f.add("trace-limit", w.trace_limit, "use the first N requests (0: all)");

    f.section("Skewed workloads (agents, hot-tenant, bursty)");
    f.add("skew-requests", w.skew_requests, "requests in all");
    f.add("tenants", w.tenants, "tenants (system prompts)");
    f.add("zipf", w.zipf, "agents, bursty: Zipf exponent of tenant popularity");
    f.add("system-blocks-min", w.system_blocks_min, "fewest system prompt blocks (16 tokens)");
    f.add("system-blocks-max", w.system_blocks_max, "most system prompt blocks");
    f.add("turns-min", w.turns_min, "fewest turns in a session");
    f.add("turns-max", w.turns_max, "most turns in a session");
    f.add("growth-min", w.growth_min, "fewest blocks a turn adds");
    f.add("growth-max", w.growth_max, "most blocks a turn adds");
    f.add("max-prompt", w.max_prompt, "a session ends before its prompt passes this")
        .value_name("TOKENS");
    f.add("think-time", w.think_time, "mean think time between turns (open loop only)");
    f.add("continue-share", w.continue_share,
          "open loop: share of arrivals that continue a ready session (else a new one)");
    f.add("hot-share", w.hot_share, "hot-tenant: share of sessions on the hot tenant");
    f.add("burst-on", w.burst_on, "bursty: mean on period of a tenant, in sessions started");
    f.add("burst-off", w.burst_off, "bursty: mean off period of a tenant, in sessions started");
    f.add("write-trace", w.write_trace,
          "also write the workload as a replayable trace (JSONL, with session_id)")
        .value_name("PATH");
    f.add("trace-rate", w.trace_rate, "with --write-trace: sessions started per second");
}

std::vector<stream> make_workload(const workload_config& cfg, std::string& error) {
    if (cfg.kind == "shared-prefix")
        return shared_prefix(cfg);
    if (cfg.kind == "multi-turn")
        return multi_turn(cfg);
    if (cfg.kind == "random")
        return random_requests(cfg);
    if (cfg.kind == "trace")
        return trace(cfg, error);
    if (cfg.kind == "azure")
        return azure_trace(cfg, error);
    if (is_skewed_workload(cfg.kind)) {
        auto out = skewed_workload(cfg, error);
        if (!error.empty())
            return {};
        if (!cfg.write_trace.empty() &&
            !write_trace(out, cfg.write_trace, cfg.trace_rate, cfg.seed, error))
            return {};
        return out;
    }
    error = "unknown workload '" + cfg.kind + "'";
    return {};
}

double ideal_hit_rate(const std::vector<stream>& workload, std::size_t block_size) {
    // Requests in the order a single client would first send them: stream by stream for trace and
    // single requests (arrival order), turn by turn within a conversation.
    std::unordered_set<common::block_hash> seen;
    double hits = 0, queries = 0;
    for (const auto& s : workload) {
        for (const auto& r : s) {
            const auto tokens = common::encode_prompt(r.prompt);
            const auto blocks = common::hash_blocks(tokens, block_size);
            const std::size_t cap = (tokens.size() - 1) / block_size;
            std::size_t hit = 0;
            while (hit < std::min(cap, blocks.size()) && seen.contains(blocks[hit]))
                ++hit;
            hits += static_cast<double>(hit * block_size);
            queries += static_cast<double>(tokens.size());
            seen.insert(blocks.begin(), blocks.end());
        }
    }
    return queries > 0 ? hits / queries : 0.0;
}

} // namespace lanes::bench
