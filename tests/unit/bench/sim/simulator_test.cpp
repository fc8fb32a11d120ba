// The offline simulator against the engine it models: the same steps, hits and latencies on a
// modelled clock; and its virtual clock and routing loop on small workloads.
#include "bench/sim/simulator.hpp"

#include "bench/sim/sim_replica.hpp"
#include "replica/backends/sim_backend.hpp"
#include "replica/engine/engine.hpp"

#include <boost/asio.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <random>

using namespace lanes;
using namespace lanes::bench;
namespace asio = boost::asio;

namespace {

// The sim backend's arithmetic without the sleep: the engine's clock moves on by the step's
// modelled time instead, so its timings are exact.
class modelled_backend final : public replica::backend {
public:
    modelled_backend(replica::sim_cost_model m, std::size_t capacity,
                     std::shared_ptr<replica::engine_clock::time_point> now)
        : model_(m)
        , capacity_(capacity)
        , now_(std::move(now)) {}
    std::string_view name() const override { return "modelled"; }
    bool forward(std::span<const replica::batch_entry> batch,
                 std::vector<std::vector<float>>&) override {
        *now_ += std::chrono::duration_cast<replica::engine_clock::duration>(
            replica::sim_step_time(model_, batch, capacity_));
        return false;
    }

private:
    replica::sim_cost_model model_;
    std::size_t capacity_;
    std::shared_ptr<replica::engine_clock::time_point> now_;
};

std::vector<std::string> shared_prompts() {
    std::vector<std::string> out;
    for (int g = 0; g < 3; ++g)
        for (int q = 0; q < 4; ++q)
            out.push_back(std::string(200, static_cast<char>('a' + g)) + " question " +
                          std::to_string(q) + std::string(static_cast<std::size_t>(20 * q), 'x'));
    return out;
}

// lanes-bench's shared-prefix workload: `groups` system prompts of `system_len` bytes, each
// asked `per_group` questions.
std::vector<stream> shared_prefix(std::int64_t groups, std::int64_t per_group,
                                  std::int64_t system_len, std::int64_t output_len) {
    workload_config wc;
    wc.groups = groups;
    wc.prompts_per_group = per_group;
    wc.system_len = system_len;
    wc.output_len = output_len;
    std::string error;
    auto w = make_workload(wc, error);
    REQUIRE(error.empty());
    return w;
}

// A run's config and policy options on one virtual clock, as lanes-bench simulate sets them.
struct clocked_setup {
    sim::sim_config cfg;
    sim::sim_policy_options po;
    std::shared_ptr<double> clock = std::make_shared<double>(0);
    clocked_setup(std::size_t replicas, std::int64_t concurrency) {
        cfg.replicas = replicas;
        cfg.concurrency = concurrency;
        cfg.clock = clock;
        po.lanes.clock = sim::virtual_clock(clock);
    }
};

} // namespace

TEST_CASE("simulated replica takes the engine's steps: same hits and latencies", "[simulate]") {
    replica::replica_config cfg;
    cfg.backend = "sim";
    cfg.kv_blocks = 40; // small: preemption and eviction happen
    cfg.max_num_seqs = 4;
    cfg.max_num_batched_tokens = 256;
    const std::size_t capacity = 40 * 16;
    const auto start = replica::engine_clock::now();
    auto now = std::make_shared<replica::engine_clock::time_point>(start);
    replica::replica_metrics metrics("m", 16, 40);
    replica::engine eng(cfg, metrics, std::make_unique<modelled_backend>(cfg.sim, capacity, now),
                        [now] { return *now; });

    sim::replica_model model;
    model.num_blocks = 40;
    model.max_num_seqs = 4;
    model.max_num_batched_tokens = 256;
    sim::sim_replica rep(model);

    const auto prompts = shared_prompts();
    asio::io_context io;
    std::vector<std::int64_t> engine_cached(prompts.size(), -1);
    for (std::size_t i = 0; i < prompts.size(); ++i) {
        replica::engine_request r;
        r.prompt = common::encode_prompt(prompts[i]);
        r.sampling.max_tokens = 64;
        r.sampling.ignore_eos = true;
        r.arrival = start;
        auto stream = std::make_shared<replica::request_stream>(io.get_executor());
        REQUIRE(eng.submit(r, stream) == replica::submit_status::accepted);
        asio::co_spawn(
            io,
            [stream, &out = engine_cached[i]]() -> asio::awaitable<void> {
                for (;;) {
                    const auto ev = co_await stream->next();
                    if (ev.finished) {
                        out = ev.cached_tokens;
                        co_return;
                    }
                }
            },
            asio::detached);
        rep.submit(i, common::encode_prompt(prompts[i]), 64);
    }
    eng.start();
    io.run();
    eng.stop();

    double t = 0, ttft_sum = 0, e2e_sum = 0;
    std::size_t firsts = 0, ends = 0;
    std::vector<std::int64_t> sim_cached(prompts.size(), -1);
    std::vector<sim::token_event> evs;
    while (const auto end = rep.start_step(t)) {
        t = *end;
        evs.clear();
        rep.finish_step(evs);
        for (const auto& ev : evs) {
            if (ev.first) {
                ttft_sum += t;
                ++firsts;
            }
            if (ev.finished) {
                e2e_sum += t;
                ++ends;
                sim_cached[ev.request] = static_cast<std::int64_t>(ev.cached_tokens);
            }
        }
    }
    CHECK(ends == prompts.size());
    CHECK(sim_cached == engine_cached);
    CHECK(rep.prefix_hits() == metrics.prefix_hits.value());
    CHECK(rep.prefix_queries() == metrics.prefix_queries.value());
    CHECK(rep.preemptions() == static_cast<std::int64_t>(metrics.preemptions.value()));
    CHECK(rep.preemptions() > 0);
    CHECK(rep.prefix_hits() > 0);
    CHECK(firsts == metrics.ttft.count());
    CHECK(ttft_sum == Approx(metrics.ttft.sum()).epsilon(1e-6));
    CHECK(e2e_sum == Approx(metrics.e2e.sum()).epsilon(1e-6));
}

TEST_CASE("virtual clock: a lone request waits one modelled prefill step and the path",
          "[simulate]") {
    std::vector<stream> w{{request_spec{std::string(99, 'q'), 1, std::nullopt, -1}}};
    sim::sim_config cfg;
    cfg.replicas = 1;
    cfg.concurrency = 1;
    auto p = sim::make_sim_policy("round_robin", {});
    const auto r = sim::simulate(cfg, w, *p);
    const double step = cfg.replica.cost.step_time(100, 0, 0).count() / 1000.0;
    CHECK(r["ttft_s"]["p50"].get<double>() == Approx(step + cfg.path_latency_s));
    CHECK(r["e2e_s"]["p50"].get<double>() == Approx(step + cfg.path_latency_s));
    CHECK(r["completed"] == 1);
    // Twice as fast a model halves the step.
    cfg.replica.cost.speedup = 2;
    const auto r2 = sim::simulate(cfg, w, *p);
    CHECK(r2["ttft_s"]["p50"].get<double>() == Approx(step / 2 + cfg.path_latency_s));
}

TEST_CASE("simulator: every request ends and prefix routing beats round-robin on shared prefixes",
          "[simulate]") {
    const auto w = shared_prefix(8, 8, 512, 8);
    clocked_setup setup(4, 8);
    const auto& cfg = setup.cfg;
    const auto& po = setup.po;
    auto rr = sim::make_sim_policy("round_robin", po);
    auto prefix = sim::make_sim_policy("prefix", po);
    const auto a = sim::simulate(cfg, w, *rr);
    const auto b = sim::simulate(cfg, w, *prefix);
    CHECK(a["completed"] == 64);
    CHECK(b["completed"] == 64);
    CHECK(a["imbalance"].get<double>() == Approx(1.0));
    const double hit_rr = a["prefix_cache_hit_rate"]["measured"].get<double>();
    const double hit_prefix = b["prefix_cache_hit_rate"]["measured"].get<double>();
    CHECK(hit_prefix > hit_rr + 0.1);
    CHECK(hit_prefix <= b["prefix_cache_hit_rate"]["ideal"].get<double>() + 1e-9);
    CHECK(b["reasons"].contains("prefix_match"));
    // Measured against the replicas' caches at each decision: round-robin passes over the
    // replica holding a group's prefix for most of the group's prompts, prefix routing for few.
    const auto& at_rr = a["cache_at_decision"];
    const auto& at_prefix = b["cache_at_decision"];
    CHECK(at_prefix["share_of_best"].get<double>() > 0.9);
    CHECK(at_prefix["share_of_best"].get<double>() <= 1.0);
    CHECK(at_rr["share_of_best"].get<double>() < at_prefix["share_of_best"].get<double>() - 0.2);
    CHECK(at_rr["passed_over"].get<std::int64_t>() >
          4 * at_prefix["passed_over"].get<std::int64_t>());
    CHECK(at_prefix["held_best_blocks"].get<double>() > 0);
    // The same run twice gives the same figures (a virtual clock, seeded draws).
    auto prefix2 = sim::make_sim_policy("prefix", po);
    const auto c = sim::simulate(cfg, w, *prefix2);
    CHECK(c["ttft_s"]["p99"] == b["ttft_s"]["p99"]);
    CHECK(c["prefix_cache_hit_rate"]["measured"] == b["prefix_cache_hit_rate"]["measured"]);
    CHECK(b["kv_usage"].size() >= 1);
}

TEST_CASE("simulator: per-request rows agree with the run's figures", "[simulate]") {
    const auto w = shared_prefix(6, 6, 384, 6);
    clocked_setup setup(3, 6);
    auto& cfg = setup.cfg;
    const auto& po = setup.po;
    auto plain = sim::make_sim_policy("prefix", po);
    const auto without = sim::simulate(cfg, w, *plain);
    CHECK_FALSE(without.contains("requests"));
    cfg.per_request = true;
    auto policy = sim::make_sim_policy("prefix", po);
    const auto r = sim::simulate(cfg, w, *policy);
    // Listing the requests changes no figure.
    CHECK(r["ttft_s"] == without["ttft_s"]);
    CHECK(r["prefix_cache_hit_rate"] == without["prefix_cache_hit_rate"]);
    const auto& rows = r["requests"];
    REQUIRE(rows.size() == 36);
    double held = 0, best = 0, sent_before = -1;
    std::vector<double> ttft;
    std::map<std::string, std::int64_t> reasons;
    std::vector<std::int64_t> served(3, 0);
    for (const auto& row : rows) {
        const auto replica = row["replica"].get<std::size_t>();
        REQUIRE(replica < 3);
        ++served[replica];
        CHECK(row["held_blocks"].get<std::size_t>() <= row["best_held_blocks"].get<std::size_t>());
        CHECK(row["inflight_before"].get<std::int64_t>() >= 0);
        CHECK(row["inflight_before"].get<std::int64_t>() < 6);
        CHECK(row["e2e_s"].get<double>() >= row["ttft_s"].get<double>());
        CHECK(row["ttft_s"].get<double>() > 0);
        held += row["held_blocks"].get<double>();
        best += row["best_held_blocks"].get<double>();
        ttft.push_back(row["ttft_s"].get<double>());
        ++reasons[row["reason"].get<std::string>()];
        if (row["stream"].get<std::size_t>() == 0) {
            CHECK(row["sent_s"].get<double>() > sent_before); // a stream's turns in order
            sent_before = row["sent_s"].get<double>();
        }
    }
    const auto& at = r["cache_at_decision"];
    CHECK(held == at["held_by_chosen_blocks"].get<double>());
    CHECK(best == at["held_best_blocks"].get<double>());
    CHECK(held > 0);
    CHECK(reasons == r["reasons"].get<std::map<std::string, std::int64_t>>());
    for (std::size_t i = 0; i < 3; ++i)
        CHECK(served[i] == r["per_replica"]["replica-" + std::to_string(i)].get<std::int64_t>());
    std::sort(ttft.begin(), ttft.end());
    CHECK(ttft.back() == Approx(r["ttft_s"]["max"].get<double>()));
}

TEST_CASE("simulator: with KV events the prefix policy routes on what the replicas hold",
          "[simulate]") {
    // 24 groups of a 20-block prefix on 2 replicas of 256 blocks: the fleet holds them all, but
    // an approximate index of 64 blocks per replica (replicas that do not report their size)
    // keeps only the last few groups routed to each.
    auto w = shared_prefix(24, 6, 320, 4);
    std::mt19937_64 rng(7);
    std::shuffle(w.begin(), w.end(), rng); // the groups' prompts interleave
    clocked_setup setup(2, 4);
    auto& cfg = setup.cfg;
    auto& po = setup.po;
    auto& clock = setup.clock;
    cfg.replica.num_blocks = 256;
    cfg.report_num_blocks = false;
    po.lanes.index.capacity = 64;
    auto approximate = sim::make_sim_policy("prefix", po);
    const auto a = sim::simulate(cfg, w, *approximate);
    CHECK(a["kv_events"]["published"] == false);
    CHECK(a["kv_events"]["batches"] == 0);

    for (const double delay : {0.0, 0.001}) {
        *clock = 0;
        sim::sim_config c = cfg;
        c.kv_events = std::make_shared<router::precise_index>();
        c.kv_event_delay_s = delay;
        sim::sim_policy_options o = po;
        o.kv_events = c.kv_events;
        auto precise = sim::make_sim_policy("prefix", o);
        const auto b = sim::simulate(c, w, *precise);
        CHECK(b["completed"] == 24 * 6);
        CHECK(b["kv_events"]["published"] == true);
        CHECK(b["kv_events"]["batches"].get<std::int64_t>() > 0);
        CHECK(b["reasons"].contains("prefix_match_precise"));
        // Every decision sees what the caches hold: the prefix goes where it is cached.
        const double share = b["cache_at_decision"]["share_of_best"].get<double>();
        CHECK(share > a["cache_at_decision"]["share_of_best"].get<double>() + 0.05);
        CHECK(share > 0.95);
        CHECK(b["prefix_cache_hit_rate"]["measured"].get<double>() >
              a["prefix_cache_hit_rate"]["measured"].get<double>());
        // The index holds what the replicas said they stored.
        for (std::size_t i = 0; i < cfg.replicas; ++i)
            CHECK(c.kv_events->size("replica-" + std::to_string(i)) > 0);
    }
}

namespace {

// Counts the picks that saw a scraped load.
class load_watcher final : public sim::sim_policy {
public:
    std::string_view name() const override { return "watcher"; }
    std::size_t pick(const sim::sim_request&, const router::pool_snapshot& pool, double) override {
        ++picks;
        if (pool.replicas[0].kv_usage)
            ++with_load;
        return picks % pool.replicas.size();
    }
    int picks = 0, with_load = 0;
};

} // namespace

TEST_CASE("simulator: scraped load reaches the policy only while fresh", "[simulate]") {
    workload_config wc;
    wc.kind = "random";
    wc.requests = 40;
    wc.input_len = 64;
    wc.output_len = 16;
    std::string error;
    const auto w = make_workload(wc, error);
    sim::sim_config cfg;
    cfg.replicas = 2;
    cfg.concurrency = 2;
    load_watcher fresh;
    sim::simulate(cfg, w, fresh);
    CHECK(fresh.picks == 40);
    CHECK(fresh.with_load >= 38); // all but the picks before the first scrape
    cfg.scrape_interval_s = 1000; // one scrape at the start, stale 2 s later
    cfg.stale_after_s = 0.05;
    load_watcher stale;
    sim::simulate(cfg, w, stale);
    CHECK(stale.with_load <= 4);
}

TEST_CASE("simulator: session arrivals keep the request rate and the think times", "[simulate]") {
    workload_config w;
    w.kind = "agents";
    w.skew_requests = 600;
    w.tenants = 8;
    w.output_len = 8;
    std::string error;
    const auto wl = make_workload(w, error);
    REQUIRE(error.empty());
    clocked_setup setup(4, 8);
    setup.cfg.rate = 20; // requests a second
    setup.cfg.session_arrivals = true;
    setup.cfg.per_request = true;
    auto rr = sim::make_sim_policy("round_robin", setup.po);
    const auto r = sim::simulate(setup.cfg, wl, *rr);
    CHECK(r["completed"] == 600);
    // 600 requests at 20 a second: sent over about 30 s (the last few wait for thinkers).
    double last_sent = 0;
    std::map<std::size_t, std::vector<std::pair<double, double>>> turns; // stream: (sent, end)
    for (const auto& row : r["requests"]) {
        last_sent = std::max(last_sent, row["sent_s"].get<double>());
        turns[row["stream"].get<std::size_t>()].emplace_back(
            row["sent_s"].get<double>(), row["sent_s"].get<double>() + row["e2e_s"].get<double>());
    }
    CHECK(last_sent > 24);
    CHECK(last_sent < 45);
    // Each turn goes after the previous one ended and its think time passed.
    for (const auto& [s, ts] : turns)
        for (std::size_t t = 1; t < ts.size(); ++t)
            CHECK(ts[t].first >= ts[t - 1].second + wl[s][t].think_s - 1e-9);
}
