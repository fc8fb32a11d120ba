// The skewed agent workloads: tenants' shares, sessions that grow, bursts that move the hot set,
// and the trace they write.
#include "bench/workload.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <filesystem>
#include <map>
#include <set>

using namespace lanes::bench;

namespace {

workload_config skewed(const std::string& kind) {
    workload_config w;
    w.kind = kind;
    w.skew_requests = 3000;
    w.tenants = 20;
    return w;
}

// Sessions per tenant, by the tenant's system prompt (a session's first 16 x min blocks).
std::map<std::string, int> sessions_by_system(const std::vector<stream>& wl, std::size_t len) {
    std::map<std::string, int> out;
    for (const auto& s : wl)
        ++out[s.front().prompt.substr(0, len)];
    return out;
}

} // namespace

TEST_CASE("agents: sessions grow turn by turn from their tenant's system prompt", "[workload]") {
    auto w = skewed("agents");
    std::string error;
    const auto wl = make_workload(w, error);
    REQUIRE(error.empty());
    std::size_t requests = 0;
    for (const auto& s : wl) {
        requests += s.size();
        REQUIRE(!s.empty());
        CHECK(static_cast<std::int64_t>(s.size()) <= w.turns_max);
        CHECK(s.front().think_s == 0);
        for (std::size_t t = 1; t < s.size(); ++t) {
            const auto& before = s[t - 1].prompt;
            const auto& now = s[t].prompt;
            CHECK(now.starts_with(before)); // the conversation so far, resent
            const auto growth = now.size() - before.size();
            CHECK(growth >= 16 * static_cast<std::size_t>(w.growth_min));
            CHECK(growth <= 16 * static_cast<std::size_t>(w.growth_max));
            CHECK(s[t].think_s > 0);
            CHECK(s[t].session == s.front().session);
        }
        CHECK(static_cast<std::int64_t>(s.back().prompt.size()) < w.max_prompt);
    }
    CHECK(requests == 3000);
    // Zipf(1) over 20 tenants: the first takes about 1 / H(20) = 28 % of the sessions, the most
    // popular few carry most of the load, and the same seed gives the same workload.
    const auto by = sessions_by_system(wl, 16 * static_cast<std::size_t>(w.system_blocks_min));
    std::vector<int> counts;
    for (const auto& [_, n] : by)
        counts.push_back(n);
    std::sort(counts.rbegin(), counts.rend());
    const double top = static_cast<double>(counts[0]) / static_cast<double>(wl.size());
    CHECK(top > 0.2);
    CHECK(top < 0.36);
    CHECK(counts[0] > 4 * counts.back());
    std::string again;
    CHECK(make_workload(w, again).front().front().prompt == wl.front().front().prompt);
    w.seed = 2;
    CHECK(make_workload(w, again).front().front().prompt != wl.front().front().prompt);
}

TEST_CASE("hot-tenant: one system prompt takes its share", "[workload]") {
    auto w = skewed("hot-tenant");
    w.hot_share = 0.5;
    std::string error;
    const auto wl = make_workload(w, error);
    REQUIRE(error.empty());
    const auto by = sessions_by_system(wl, 16 * static_cast<std::size_t>(w.system_blocks_min));
    int top = 0;
    for (const auto& [_, n] : by)
        top = std::max(top, n);
    const double share = static_cast<double>(top) / static_cast<double>(wl.size());
    CHECK(share > 0.44);
    CHECK(share < 0.56);
    CHECK(by.size() == 20); // the rest spread over every other tenant
}

TEST_CASE("bursty: the hot set moves over time", "[workload]") {
    auto w = skewed("bursty");
    w.burst_on = 50;
    w.burst_off = 100;
    std::string error;
    const auto wl = make_workload(w, error);
    REQUIRE(error.empty());
    const std::size_t len = 16 * static_cast<std::size_t>(w.system_blocks_min);
    // The tenants seen in the first and the last hundred sessions differ.
    std::set<std::string> early, late;
    for (std::size_t i = 0; i < 100; ++i) {
        early.insert(wl[i].front().prompt.substr(0, len));
        late.insert(wl[wl.size() - 1 - i].front().prompt.substr(0, len));
    }
    std::set<std::string> both;
    for (const auto& t : early)
        if (late.contains(t))
            both.insert(t);
    CHECK(both.size() < early.size());
}

TEST_CASE("skewed workloads: bad knobs are named", "[workload]") {
    auto w = skewed("agents");
    w.turns_max = 0;
    std::string error;
    CHECK(make_workload(w, error).empty());
    CHECK(error.find("--turns") != std::string::npos);
    w = skewed("hot-tenant");
    w.hot_share = 1.5;
    CHECK(make_workload(w, error).empty());
    CHECK(error.find("--hot-share") != std::string::npos);
    w = skewed("agents");
    w.max_prompt = 64; // shorter than a system prompt
    CHECK(make_workload(w, error).empty());
    CHECK(error.find("--max-prompt") != std::string::npos);
}

TEST_CASE("skewed workloads replay from the trace they write", "[workload]") {
    const auto file = (std::filesystem::temp_directory_path() / "lanes-skew-trace.jsonl").string();
    auto w = skewed("agents");
    w.skew_requests = 400;
    w.write_trace = file;
    std::string error;
    const auto wl = make_workload(w, error);
    REQUIRE(error.empty());
    workload_config replay_cfg;
    replay_cfg.kind = "trace";
    replay_cfg.trace_file = file;
    const auto replay = make_workload(replay_cfg, error);
    REQUIRE(error.empty());
    REQUIRE(replay.size() == 400);
    // The same prompts (their sharing exactly: equal prefixes give equal prefixes), each with its
    // session, in arrival order: a session's turns keep their order.
    std::map<std::string, std::vector<std::size_t>> lengths;
    for (const auto& s : replay) {
        REQUIRE(s.front().session);
        lengths[*s.front().session].push_back(s.front().prompt.size());
    }
    for (const auto& s : wl) {
        const auto& seen = lengths.at(*s.front().session);
        REQUIRE(seen.size() == s.size());
        for (std::size_t t = 0; t < s.size(); ++t)
            CHECK(seen[t] == s[t].prompt.size());
    }
    CHECK(ideal_hit_rate(replay, 16) == Approx(ideal_hit_rate(wl, 16)).margin(0.02));
    std::remove(file.c_str());
}
