// lanes-decision-bench: the router's per-request decision cost — parse the JSON body (the router's
// fast path, router/request_view), render the
// prompt (chat template for chat requests), tokenize, hash its blocks and pick a replica — with
// 16 replicas and a prefix index filled to capacity. Prints p50/p99/max per prompt size as JSON.
// --tokenizer DIR: chats in a model's own tokens instead, as lanes-router --tokenizer routes them
// (parse, render, special-token split, encode, hash, pick), on new conversations and on a
// conversation whose last message alone is new.
// --kv-events: every replica's KV events live (the router's default where replicas publish them),
// its routed blocks expected in the precise index, so that pick asks it of every replica.
#include "common/config_util.hpp"
#include "common/openai/request.hpp"
#include "common/prompt/block_hash.hpp"
#include "common/prompt/model_tokenizer.hpp"
#include "common/prompt/tokenizer.hpp"
#include "router/index/precise_index.hpp"
#include "router/policies/factory.hpp"
#include "router/request/local_tokenizer.hpp"
#include "router/request/request_view.hpp"
#include "router/request/routing_key.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <filesystem>
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

// A policy over `replicas` replicas whose indexes are filled to capacity with unrelated
// prompts' blocks.
struct fleet {
    std::unique_ptr<router::policy> policy;
    router::pool_snapshot pool;
};

fleet make_fleet(const std::string& policy_name, int replicas, bool kv_events,
                 std::mt19937_64& rng) {
    router::policy_options options;
    if (kv_events)
        options.precise = std::make_shared<router::precise_index>();
    fleet f{router::make_policy(policy_name, options), {}};
    for (int i = 0; i < replicas; ++i) {
        router::replica_view v;
        v.id = "http://10.0.0." + std::to_string(i) + ":8000";
        v.num_blocks = 65536;
        v.inflight = i % 3;
        v.kv_usage = 0.5;
        v.waiting = 0;
        f.pool.replicas.push_back(v);
        if (options.precise) {
            options.precise->reset(v.id, true);
            options.precise->confirm(v.id, v.epoch);
        }
    }
    f.policy->on_replicas_changed(f.pool);
    const std::size_t fill_len = 16 * 4096;
    for (int i = 0; i < replicas; ++i) {
        for (int k = 0; k < 16; ++k) {
            const auto tokens = common::encode_prompt(random_text(rng, fill_len));
            router::route_request rr;
            rr.blocks = common::hash_blocks(tokens, common::default_block_size);
            rr.prompt_tokens = tokens.size();
            answered(*f.policy, rr, f.pool.replicas[static_cast<std::size_t>(i)].id);
        }
    }
    return f;
}

nlohmann::json measure(const std::string& policy_name, std::size_t prompt_len, int replicas,
                       int iterations, bool chat, bool kv_events) {
    std::mt19937_64 rng(1);
    fleet f = make_fleet(policy_name, replicas, kv_events, rng);
    auto& policy = f.policy;
    auto& pool = f.pool;
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

// Words for conversations a real vocabulary tokenizes as it would prose (random letters would
// fall apart into single bytes).
constexpr std::array<std::string_view, 48> words = {
    "the",     "replica", "router",  "cache",   "prefix", "request", "model",   "tokens",
    "which",   "serves",  "already", "holds",   "block",  "prompt",  "system",  "user",
    "answer",  "load",    "queue",   "latency", "tenant", "agent",   "session", "tool",
    "result",  "returns", "every",   "first",   "second", "time",    "under",   "over",
    "with",    "without", "because", "before",  "after",  "while",   "engine",  "memory",
    "compute", "GPU",     "2048",    "17",      "(see",   "below)",  "—",       "über"};

std::string prose(std::mt19937_64& rng, std::size_t n_words) {
    std::string s;
    for (std::size_t i = 0; i < n_words; ++i) {
        if (i > 0)
            s += (rng() % 12 == 0) ? ". " : " ";
        s += words[rng() % words.size()];
    }
    return s + ".";
}

// A conversation of about `tokens` tokens in `t`'s vocabulary: a system prompt of a quarter of
// it, then user and assistant turns of ~250 words; the last message is the user's.
nlohmann::ordered_json conversation(const common::model_tokenizer& t, std::mt19937_64& rng,
                                    std::size_t tokens) {
    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    messages.push_back({{"role", "system"}, {"content", prose(rng, tokens / 5)}});
    std::size_t have = t.encode(messages[0]["content"].get<std::string>(), false).size();
    while (have < tokens) {
        const std::string role = messages.size() % 2 == 1 ? "user" : "assistant";
        messages.push_back({{"role", role}, {"content", prose(rng, 250)}});
        have += t.encode(messages.back()["content"].get<std::string>(), false).size() + 5;
    }
    if (messages.back()["role"] != "user")
        messages.push_back({{"role", "user"}, {"content", prose(rng, 40)}});
    return messages;
}

// Decision time in a model's own tokens, as lanes-router --tokenizer makes it: parse the body,
// render the chat template, split out special tokens, encode, hash, pick. Cold: every
// conversation new (nothing in the segment cache); warm: the same conversation with only its
// last message new, as a growing chat's next turn.
nlohmann::json measure_tokenized(const common::model_tokenizer& t, const std::string& name,
                                 const std::string& policy_name, std::size_t chat_tokens,
                                 int replicas, int iterations, bool warm) {
    std::mt19937_64 rng(7);
    fleet f = make_fleet(policy_name, replicas, false, rng);
    nlohmann::ordered_json base = conversation(t, rng, chat_tokens);
    const auto body_of = [&](nlohmann::ordered_json messages) {
        return nlohmann::ordered_json{{"model", "m"}, {"messages", std::move(messages)}}.dump();
    };
    if (warm) { // the conversation's previous turn went through once
        const std::string first = body_of(base);
        common::chat_fields fields;
        const auto j = nlohmann::ordered_json::parse(first);
        fields.messages = &j["messages"];
        (void)t.encode(t.render_chat(fields, 0), false);
    }
    std::vector<double> total, parse, render, split, encode, hash, pick;
    std::size_t tokens = 0;
    for (int i = 0; i < iterations; ++i) {
        nlohmann::ordered_json messages = warm ? base : conversation(t, rng, chat_tokens);
        messages.back()["content"] = prose(rng, 40);
        const std::string body = body_of(std::move(messages));
        const auto t0 = clock_type::now();
        const auto j = router::read_template_json(body);
        common::chat_fields fields;
        fields.messages = &j["messages"];
        const auto t1 = clock_type::now();
        const std::string text = t.render_chat(fields, 0);
        const auto t2 = clock_type::now();
        t.bpe().split_added_tokens(
            text, [](std::string_view) {}, [](common::token_id) {});
        const auto t3 = clock_type::now();
        const auto ids = t.encode(text, false);
        const auto t4 = clock_type::now();
        router::route_request rr;
        rr.blocks =
            common::hash_blocks(ids, common::default_block_size, router::affinity_root("m", 0));
        rr.prompt_tokens = ids.size();
        const auto t5 = clock_type::now();
        const auto d = f.policy->pick(rr, f.pool, {});
        const auto t6 = clock_type::now();
        answered(*f.policy, rr, f.pool.replicas[*d.replica].id);
        const auto us = [](auto a, auto b) {
            return std::chrono::duration<double, std::micro>(b - a).count();
        };
        // The split is timed on its own, then again inside encode: encode is the difference.
        total.push_back(us(t0, t6) - us(t2, t3));
        parse.push_back(us(t0, t1));
        render.push_back(us(t1, t2));
        split.push_back(us(t2, t3));
        encode.push_back(std::max(0.0, us(t3, t4) - us(t2, t3)));
        hash.push_back(us(t4, t5));
        pick.push_back(us(t5, t6));
        tokens = ids.size();
    }
    for (auto* v : {&total, &parse, &render, &split, &encode, &hash, &pick})
        std::sort(v->begin(), v->end());
    const auto q = [](const std::vector<double>& v, double at) {
        return v[static_cast<std::size_t>(at * static_cast<double>(v.size() - 1))];
    };
    return {{"tokenizer", name},
            {"policy", policy_name},
            {"chat_tokens", tokens},
            {"messages", base.size()},
            {"last_message_new_only", warm},
            {"replicas", replicas},
            {"iterations", iterations},
            {"p50_us", q(total, 0.5)},
            {"p99_us", q(total, 0.99)},
            {"max_us", total.back()},
            {"p50_parse_us", q(parse, 0.5)},
            {"p50_render_us", q(render, 0.5)},
            {"p50_special_split_us", q(split, 0.5)},
            {"p50_encode_us", q(encode, 0.5)},
            {"p50_hash_us", q(hash, 0.5)},
            {"p50_pick_us", q(pick, 0.5)},
            {"p99_render_us", q(render, 0.99)},
            {"p99_encode_us", q(encode, 0.99)}};
}

} // namespace

int main(int argc, char** argv) {
    std::string policies = "prefix,kv_aware,round_robin";
    std::string sizes = "1024,8192";
    std::int64_t replicas = 16, iterations = 20000;
    bool kv_events = false;
    std::vector<std::string> tokenizers;
    std::int64_t chat_tokens = 8192;
    std::int64_t cold_iterations = 300;
    common::flag_set f("lanes-decision-bench", "Routing decision time of lanes-router.");
    f.add("policies", policies, "comma-separated policies").value_name("LIST");
    f.add("sizes", sizes, "comma-separated prompt sizes (bytes = tokens)").value_name("LIST");
    f.add("replicas", replicas, "replicas in the pool");
    f.add("iterations", iterations, "decisions per measurement");
    f.add("kv-events", kv_events, "every replica's KV events live (pick asks the precise index)");
    f.add("tokenizer", tokenizers,
          "a model's tokenizer directory: measure chats in its tokens instead (rendered, "
          "encoded, hashed, picked), cold and with only the last message new")
        .value_name("DIR");
    f.add("chat-tokens", chat_tokens, "--tokenizer: tokens of the measured conversation");
    f.add("cold-iterations", cold_iterations, "--tokenizer: decisions on new conversations");
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
    if (!tokenizers.empty()) {
        for (const auto& dir : tokenizers) {
            const auto t = common::model_tokenizer::load(dir);
            // Named after the directory (its parent's name when it is called "models").
            std::filesystem::path path(dir);
            if (path.filename().empty())
                path = path.parent_path();
            if (path.filename() == "models")
                path = path.parent_path();
            const std::string name = path.filename().string();
            for (const bool warm : {false, true})
                out.push_back(measure_tokenized(
                    *t, name, split(policies).front(), static_cast<std::size_t>(chat_tokens),
                    static_cast<int>(replicas),
                    warm ? static_cast<int>(iterations) : static_cast<int>(cold_iterations), warm));
        }
        std::puts(out.dump(2).c_str());
        return 0;
    }
    for (const auto& p : split(policies))
        for (const auto& size : split(sizes))
            for (bool chat : {false, true})
                out.push_back(measure(p, std::stoul(size), static_cast<int>(replicas),
                                      static_cast<int>(iterations), chat, kv_events));
    std::puts(out.dump(2).c_str());
    return 0;
}
