// lanes-decision-bench: the router's per-request decision cost — parse the JSON body (the router's
// fast path, router/request_view), render the
// prompt (chat template for chat requests), tokenize, hash its blocks and pick a replica — with
// 16 replicas and a prefix index filled to capacity. Prints p50/p99/max per prompt size as JSON.
// --kv-events: every replica's KV events live (the router's default where replicas publish them),
// its routed blocks expected in the precise index, so that pick asks it of every replica.
#include "common/config_util.hpp"
#include "common/openai/request.hpp"
#include "common/prompt/block_hash.hpp"
#include "common/prompt/tokenizer.hpp"
#include "router/index/precise_index.hpp"
#include "router/policies/factory.hpp"
#include "router/request/request_view.hpp"
#include "router/request/routing_key.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <sstream>

namespace {

using namespace lanes;
using clock_type = std::chrono::steady_clock;

std::string random_text(std::mt19937_64& rng, std::size_t n) {
    std::string s(n, ' ');
    for (auto& c : s)
        c = static_cast<char>('a' + rng() % 26);
    return s;
}

// A request routed and answered, as the router tells a policy: its prefill over, its answer
// taken. (Left pending, every request would stay queued at its replica for the rest of the run,
// a fleet that never answers.)
void answered(router::policy& p, const router::route_request& rr, const std::string& replica) {
    const std::size_t recorded = p.on_routed(rr, replica);
    p.on_first_byte(rr, replica, recorded);
    p.on_outcome(rr, replica, recorded, true);
}

nlohmann::json measure(const std::string& policy_name, std::size_t prompt_len, int replicas,
                       int iterations, bool chat, bool kv_events) {
    router::policy_options options;
    if (kv_events)
        options.precise = std::make_shared<router::precise_index>();
    auto policy = router::make_policy(policy_name, options);
    router::pool_snapshot pool;
    for (int i = 0; i < replicas; ++i) {
        router::replica_view v;
        v.id = "http://10.0.0." + std::to_string(i) + ":8000";
        v.num_blocks = 65536;
        v.inflight = i % 3;
        v.kv_usage = 0.5;
        v.waiting = 0;
        pool.replicas.push_back(v);
        if (options.precise) {
            options.precise->reset(v.id, true);
            options.precise->confirm(v.id, v.epoch);
        }
    }
    policy->on_replicas_changed(pool);
    std::mt19937_64 rng(1);
    // Fill every replica's index to capacity with unrelated prompts' blocks.
    const std::size_t fill_len = 16 * 4096;
    for (int i = 0; i < replicas; ++i) {
        for (int k = 0; k < 16; ++k) {
            const auto tokens = common::encode_prompt(random_text(rng, fill_len));
            const auto blocks = common::hash_blocks(tokens, common::default_block_size);
            router::route_request rr;
            rr.blocks = blocks;
            rr.prompt_tokens = tokens.size();
            answered(*policy, rr, pool.replicas[static_cast<std::size_t>(i)].id);
        }
    }
    // Requests: 8 shared system prompts (half the prompt) + a unique tail, so matches happen.
    std::vector<std::string> systems;
    for (int i = 0; i < 8; ++i)
        systems.push_back(random_text(rng, prompt_len / 2));
    std::vector<std::string> bodies;
    for (int i = 0; i < 256; ++i) {
        const std::string prompt = systems[static_cast<std::size_t>(i) % systems.size()] +
                                   random_text(rng, prompt_len - prompt_len / 2);
        nlohmann::json body =
            chat ? nlohmann::json{{"model", "m"},
                                  {"messages", {{{"role", "user"}, {"content", prompt}}}},
                                  {"stream", true}}
                 : nlohmann::json{{"model", "m"}, {"prompt", prompt}, {"stream", true}};
        bodies.push_back(body.dump());
    }
    std::vector<double> micros, parse_us, hash_us, pick_us;
    micros.reserve(static_cast<std::size_t>(iterations));
    const auto kind = chat ? router::body_kind::chat : router::body_kind::completions;
    const router::hash_units units; // lanes replicas': 16 byte tokens a block
    for (int i = 0; i < iterations; ++i) {
        const std::string& body = bodies[static_cast<std::size_t>(i) % bodies.size()];
        const auto start = clock_type::now();
        auto parsed = router::read_request(kind, body); // the router's reading of a body
        const auto parsed_at = clock_type::now();
        const router::routing_key key = router::make_routing_key(*parsed.view, "m", units, 4);
        const auto hashed_at = clock_type::now();
        router::route_request rr;
        rr.blocks = key.blocks;
        rr.prompt_tokens = key.prompt_tokens;
        const auto d = policy->pick(rr, pool, {});
        const auto end = clock_type::now();
        const auto elapsed = end - start;
        parse_us.push_back(std::chrono::duration<double, std::micro>(parsed_at - start).count());
        hash_us.push_back(std::chrono::duration<double, std::micro>(hashed_at - parsed_at).count());
        pick_us.push_back(std::chrono::duration<double, std::micro>(end - hashed_at).count());
        answered(*policy, rr, pool.replicas[*d.replica].id);
        micros.push_back(std::chrono::duration<double, std::micro>(elapsed).count());
    }
    for (auto* v : {&micros, &parse_us, &hash_us, &pick_us})
        std::sort(v->begin(), v->end());
    auto at = [&](double q) { return micros[static_cast<std::size_t>(q * (micros.size() - 1))]; };
    auto p50 = [](const std::vector<double>& v) { return v[v.size() / 2]; };
    return {{"policy", policy_name},
            {"prompt_tokens", prompt_len + 1},
            {"chat", chat},
            {"replicas", replicas},
            {"kv_events", kv_events},
            {"iterations", iterations},
            {"p50_us", at(0.5)},
            {"p99_us", at(0.99)},
            {"max_us", micros.back()},
            {"p50_parse_us", p50(parse_us)},
            {"p50_tokenize_hash_us", p50(hash_us)},
            {"p50_pick_us", p50(pick_us)}};
}

} // namespace

int main(int argc, char** argv) {
    std::string policies = "prefix,kv_aware,round_robin";
    std::string sizes = "1024,8192";
    std::int64_t replicas = 16, iterations = 20000;
    bool kv_events = false;
    common::flag_set f("lanes-decision-bench", "Routing decision time of lanes-router.");
    f.add("policies", policies, "comma-separated policies").value_name("LIST");
    f.add("sizes", sizes, "comma-separated prompt sizes (bytes = tokens)").value_name("LIST");
    f.add("replicas", replicas, "replicas in the pool");
    f.add("iterations", iterations, "decisions per measurement");
    f.add("kv-events", kv_events, "every replica's KV events live (pick asks the precise index)");
    auto errors = f.parse(argc, argv);
    if (f.print_if_requested())
        return 0;
    if (!errors.empty())
        return common::report_config_errors("lanes-decision-bench", errors);
    nlohmann::json out = nlohmann::json::array();
    auto split = [](const std::string& s) {
        std::vector<std::string> v;
        std::stringstream in(s);
        for (std::string item; std::getline(in, item, ',');)
            v.push_back(item);
        return v;
    };
    for (const auto& p : split(policies))
        for (const auto& size : split(sizes))
            for (bool chat : {false, true})
                out.push_back(measure(p, std::stoul(size), static_cast<int>(replicas),
                                      static_cast<int>(iterations), chat, kv_events));
    std::puts(out.dump(2).c_str());
    return 0;
}
