#include "bench/sim/simulate_cli.hpp"

#include "bench/sim/simulator.hpp"
#include "bench/workload.hpp"
#include "common/config_util.hpp"
#include "replica/config.hpp"
#include "router/policies/factory.hpp"
#include "router/policies/policy_flags.hpp"

#include <nlohmann/json.hpp>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <sstream>

namespace lanes::bench::sim {

namespace {

std::vector<std::string> split(const std::string& list) {
    std::vector<std::string> out;
    std::stringstream in(list);
    for (std::string item; std::getline(in, item, ',');)
        if (!item.empty())
            out.push_back(item);
    return out;
}

std::vector<std::string> expand(const std::vector<std::string>& names) {
    std::vector<std::string> out;
    for (const auto& n : names) {
        if (n == "all" || n == "lanes")
            for (const auto& p : router::policy_names())
                out.push_back(p);
        if (n == "all" || n == "peers")
            for (const auto& p : peer_names())
                out.push_back(p);
        if (n != "all" && n != "lanes" && n != "peers")
            out.push_back(n);
    }
    return out;
}

// "NAME+kv-events": NAME with the replicas publishing KV events to it.
constexpr std::string_view events_suffix = "+kv-events";

struct policy_run {
    std::string name; // as make_sim_policy knows it
    bool kv_events = false;
};

std::optional<policy_run> parse_run(const std::string& label) {
    if (label.size() > events_suffix.size() && label.ends_with(events_suffix)) {
        std::string base = label.substr(0, label.size() - events_suffix.size());
        if (!reads_kv_events(base))
            return std::nullopt;
        return policy_run{std::move(base), true};
    }
    return policy_run{label, false};
}

std::string line_of(const nlohmann::json& r) {
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "%-22s hit %.3f (ideal %.3f, fleet-size ideal %.3f)  TTFT p50 %.1f ms p99 %.1f "
                  "ms  e2e p50 %.2f s  %.2f req/s  imbalance %.2f  [%.1f s]",
                  r["policy"].get<std::string>().c_str(),
                  r["prefix_cache_hit_rate"]["measured"].get<double>(),
                  r["prefix_cache_hit_rate"]["ideal"].get<double>(),
                  r["prefix_cache_hit_rate"]["ideal_fleet"].get<double>(),
                  r["ttft_s"]["p50"].get<double>() * 1000, r["ttft_s"]["p99"].get<double>() * 1000,
                  r["e2e_s"]["p50"].get<double>(), r["request_throughput"].get<double>(),
                  r["imbalance"].get<double>(), r["simulation_wall_s"].get<double>());
    return buf;
}

} // namespace

int simulate_main(int argc, const char* const* argv) {
    workload_config w;
    sim_config cfg;
    std::string policies = "prefix";
    std::string out_file = "simulate.json";
    std::int64_t replicas = 4;
    replica::sim_cost_model& cost = cfg.replica.cost;
    std::size_t kv_blocks = 4096;
    std::int64_t block_size = 16, max_num_seqs = 64, max_batched = 2048, max_model_len = 8192;
    std::chrono::milliseconds scrape{100}, stale{2000};
    double load = 0;
    std::string capacity_policy = "prefix";
    sim_policy_options po;
    common::flag_set f("lanes-bench simulate",
                       "Offline replay of a workload through simulated replicas and routing "
                       "policies on a virtual clock (results are modelled: sim).");
    f.section("Simulation");
    f.add("policy", policies,
          "comma-separated policies: lanes' (" + std::to_string(router::policy_names().size()) +
              "), the peers' (bench/sim/peers), or all, lanes, peers; NAME+kv-events runs NAME "
              "(prefix, kv_aware, dynamo_kv) with the replicas publishing KV events to it")
        .value_name("LIST");
    f.add("replicas", replicas, "simulated replicas");
    f.add("concurrency", cfg.concurrency, "closed loop: streams in flight");
    f.add("rate", cfg.rate,
          "open loop: Poisson arrivals per second (0: closed loop): of streams, or for agents, "
          "hot-tenant and bursty of requests (a session's next turn, else a new session)");
    f.add("trace-times", cfg.trace_times, "open loop at the trace's timestamps");
    f.add("load", load,
          "open loop at this fraction of the fleet's capacity (its closed-loop throughput under "
          "--capacity-policy with its default knobs); overrides --rate and --trace-times");
    f.add("capacity-policy", capacity_policy, "policy whose saturated throughput is the capacity")
        .value_name("NAME");
    f.add("out", out_file, "result JSON file").value_name("PATH");
    f.add("per-request", cfg.per_request,
          "each result lists its requests (replica, cache found against the best, in flight "
          "there, reason, TTFT, e2e)");
    add_workload_flags(f, w);
    f.section("Replicas");
    f.add("kv-blocks", kv_blocks, "KV cache blocks per replica");
    f.add("block-size", block_size, "tokens per KV block (and the router's hash block)")
        .value_name("TOKENS");
    f.add("max-num-seqs", max_num_seqs, "most requests running in one step");
    f.add("max-num-batched-tokens", max_batched, "most tokens computed per step")
        .value_name("TOKENS");
    f.add("max-model-len", max_model_len, "longest prompt + output").value_name("TOKENS");
    double gpu_memory_gb = 0, weights_gb = 16, gpu_util = 0.9;
    std::int64_t kv_bytes_per_token = 131072;
    f.add("gpu-memory-gb", gpu_memory_gb,
          "KV capacity from memory instead of --kv-blocks: GB per GPU (0: use --kv-blocks)");
    f.add("weights-gb", weights_gb, "with --gpu-memory-gb: the model's weights, split --tp ways");
    f.add("gpu-memory-utilization", gpu_util, "with --gpu-memory-gb: the share vLLM would take");
    f.add("kv-bytes-per-token", kv_bytes_per_token,
          "with --gpu-memory-gb: K and V bytes per token, all layers (Llama-3-8B bf16: 131072)")
        .value_name("BYTES");
    f.add("report-num-blocks", cfg.report_num_blocks,
          "replicas report their KV capacity (sizing lanes' index), as lanes replicas and vLLM "
          "do, and their max_num_seqs, as lanes replicas do");
    f.section("Replica cost model");
    replica::add_sim_cost_flags(f, cost);
    f.add("tp", cost.tp, "tensor-parallel GPUs per replica (modelled, see sim_cost_model.hpp)");
    f.add("tp-layers", cost.tp_layers, "TP model: layers (two all-reduces each)");
    f.add("tp-hidden", cost.tp_hidden, "TP model: hidden size (activation elements per token)");
    f.add("tp-link-gb-per-s", cost.tp_link_gb_per_s, "TP model: all-reduce link bandwidth, GB/s");
    f.add("tp-link-latency-us", cost.tp_link_latency_us, "TP model: latency per all-reduce, us");
    f.section("Router");
    std::chrono::milliseconds kv_event_delay{1};
    f.add("kv-event-delay", kv_event_delay,
          "with NAME+kv-events: from a step's end to its KV events reaching the router");
    f.add("scrape-interval", scrape, "the router's load scrape period (a peer may bring its own)");
    f.add("stale-after", stale, "scraped load older than this is ignored");
    // lanes' policies' knobs: lanes-router's own flags.
    router::add_policy_flags(f, po.lanes);
    auto errors = f.parse(argc, argv);
    if (f.print_if_requested())
        return 0;
    router::check_policy_options(po.lanes, errors);
    if (replicas < 1 || kv_blocks < 1 || block_size < 1 || max_num_seqs < 1 || max_batched < 1 ||
        max_model_len < 2)
        errors.push_back("--replicas, --kv-blocks, --block-size, --max-num-seqs, "
                         "--max-num-batched-tokens must be positive, --max-model-len at least 2");
    if (cfg.concurrency < 1 || cfg.rate < 0 || load < 0 || cost.speedup <= 0)
        errors.push_back("--concurrency must be at least 1; --rate and --load not negative; "
                         "--sim-speedup positive");
    if (cost.tp < 1 || gpu_memory_gb < 0 || kv_bytes_per_token < 1 || cost.tp_link_gb_per_s <= 0)
        errors.push_back("--tp at least 1, --gpu-memory-gb not negative, --kv-bytes-per-token "
                         "and --tp-link-gb-per-s positive");
    if (gpu_memory_gb > 0) {
        // What the TP group has left for KV once the weights are in: tp x util x memory - weights.
        const double left = static_cast<double>(cost.tp) * gpu_util * gpu_memory_gb - weights_gb;
        const double per_block = static_cast<double>(kv_bytes_per_token) *
                                 static_cast<double>(std::max<std::int64_t>(block_size, 1));
        if (left <= 0)
            errors.push_back("--weights-gb do not fit in --tp x --gpu-memory-gb x utilization");
        else
            kv_blocks = static_cast<std::size_t>(left * 1024 * 1024 * 1024 / per_block);
    }
    if ((w.kind == "trace" || w.kind == "azure") && w.trace_file.empty())
        errors.push_back("--workload " + w.kind + " needs --trace FILE");
    const auto names = expand(split(policies));
    if (names.empty())
        errors.push_back("--policy names none");
    po.block_size = static_cast<std::size_t>(std::max<std::int64_t>(block_size, 1));
    auto clock = std::make_shared<double>(0.0);
    po.lanes.clock = virtual_clock(clock);
    for (const auto& n : names) {
        const auto run = parse_run(n);
        if (!run || !make_sim_policy(run->name, po))
            errors.push_back("--policy: unknown '" + n + "'" +
                             (n.ends_with(events_suffix) ? " (+kv-events: prefix, kv_aware or "
                                                           "dynamo_kv)"
                                                         : ""));
    }
    if (kv_event_delay.count() < 0)
        errors.push_back("--kv-event-delay must not be negative");
    if (load > 0 && !make_sim_policy(capacity_policy, po))
        errors.push_back("--capacity-policy: unknown '" + capacity_policy + "'");
    std::vector<stream> workload;
    if (errors.empty()) {
        std::string error;
        workload = make_workload(w, error);
        if (!error.empty())
            errors.push_back(error);
        else if (workload.empty())
            errors.push_back("the workload is empty");
    }
    if (!errors.empty())
        return common::report_config_errors("lanes-bench simulate", errors);

    cfg.replicas = static_cast<std::size_t>(replicas);
    cfg.replica.num_blocks = kv_blocks;
    cfg.replica.block_size = static_cast<std::size_t>(block_size);
    cfg.replica.max_num_seqs = static_cast<std::size_t>(max_num_seqs);
    cfg.replica.max_num_batched_tokens = static_cast<std::size_t>(max_batched);
    cfg.replica.max_model_len = static_cast<std::size_t>(max_model_len);
    cfg.text_block_bytes = static_cast<std::size_t>(block_size);
    cfg.scrape_interval_s = std::chrono::duration<double>(scrape).count();
    cfg.stale_after_s = std::chrono::duration<double>(stale).count();
    cfg.seed = static_cast<std::uint64_t>(w.seed);
    cfg.clock = clock;
    if (w.kind == "trace" || w.kind == "azure")
        cfg.trace_times = cfg.trace_times || cfg.rate == 0;
    // The skewed workloads' arrivals are requests (a session's next turn or a new session).
    cfg.session_arrivals = is_skewed_workload(w.kind);
    cfg.continue_share = w.continue_share;

    nlohmann::json doc = {
        {"modelled", "sim: lanes-bench simulate"},
        {"workload", w.kind},
        {"trace_file", w.trace_file},
        {"replicas", replicas},
        {"kv_blocks", kv_blocks},
        {"sim_speedup", cost.speedup},
        {"tp", cost.tp},
        {"kv_capacity_tokens", kv_blocks *
                                   static_cast<std::size_t>(std::max<std::int64_t>(block_size, 1)) *
                                   static_cast<std::size_t>(replicas)},
        {"results", nlohmann::json::array()}};
    if (load > 0) {
        // The capacity: a closed loop deep enough to keep every replica's batch full.
        sim_config sat = cfg;
        sat.rate = 0;
        sat.trace_times = false;
        sat.concurrency = replicas * max_num_seqs;
        // With the policy's default knobs: the load level belongs to the workload and fleet,
        // not to the knobs under test.
        sim_policy_options defaults = po;
        defaults.lanes = router::policy_options{};
        defaults.lanes.clock = po.lanes.clock;
        auto p = make_sim_policy(capacity_policy, defaults);
        const auto r = simulate(sat, workload, *p);
        const double capacity = r["request_throughput"].get<double>();
        cfg.rate = load * capacity;
        cfg.trace_times = false;
        doc["capacity_rps"] = capacity;
        doc["load"] = load;
        doc["rate"] = cfg.rate;
        std::printf("capacity %.2f req/s (%s, closed loop at %lld); open loop at %.2f req/s\n",
                    capacity, capacity_policy.c_str(), static_cast<long long>(sat.concurrency),
                    cfg.rate);
    }
    if (cfg.rate > 0)
        doc["rate"] = cfg.rate; // the offered rate, however it was set
    cfg.kv_event_delay_s = std::chrono::duration<double>(kv_event_delay).count();
    for (const auto& n : names) {
        *clock = 0;
        const auto run = *parse_run(n);
        sim_config c = cfg;
        sim_policy_options o = po;
        if (run.kv_events) {
            c.kv_events = std::make_shared<router::precise_index>();
            o.kv_events = c.kv_events;
        }
        auto p = make_sim_policy(run.name, o);
        auto r = simulate(c, workload, *p);
        r["policy"] = n;
        std::printf("%s\n", line_of(r).c_str());
        std::fflush(stdout);
        doc["results"].push_back(std::move(r));
    }
    std::ofstream file(out_file);
    file << doc.dump(1) << "\n";
    file.close();
    if (!file) {
        std::fprintf(stderr, "lanes-bench simulate: cannot write %s\n", out_file.c_str());
        return 2;
    }
    std::printf("results written to %s\n", out_file.c_str());
    return 0;
}

} // namespace lanes::bench::sim
