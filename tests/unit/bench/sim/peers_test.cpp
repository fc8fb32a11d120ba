// The peers' routing algorithms (bench/sim/peers): each one's documented decisions on small
// hand-made cases.
#include "bench/sim/peers/char_radix_tree.hpp"
#include "bench/sim/peers/dynamo_kv.hpp"
#include "bench/sim/peers/kubeai_chwbl.hpp"
#include "bench/sim/peers/llmd_scorer.hpp"
#include "bench/sim/peers/power_of_two.hpp"
#include "bench/sim/peers/prodstack_prefixaware.hpp"
#include "bench/sim/peers/sglang_cache_aware.hpp"
#include "bench/sim/peers/sglang_prefix_hash.hpp"
#include "common/prompt/tokenizer.hpp"

#include <catch2/catch.hpp>

using namespace lanes;
using namespace lanes::bench::sim;

namespace {

router::pool_snapshot pool_of(std::vector<std::int64_t> inflight) {
    router::pool_snapshot p;
    for (std::size_t i = 0; i < inflight.size(); ++i) {
        router::replica_view v;
        v.id = "http://replica-" + std::to_string(i);
        v.inflight = inflight[i];
        p.replicas.push_back(v);
    }
    return p;
}

struct prompt {
    std::string text;
    std::vector<common::block_hash> blocks;
    sim_request req(std::uint64_t id = 1) const {
        return {id, text, blocks, text.size() + 1, std::nullopt};
    }
};

prompt make(std::string text) {
    prompt p{std::move(text), {}};
    p.blocks = common::hash_prompt_blocks(p.text, 16);
    return p;
}

} // namespace

TEST_CASE("char radix tree: longest shared prefix, its tenant, sizes and LRU eviction", "[peers]") {
    char_radix_tree t;
    t.insert("hello world", 0, 1);
    t.insert("hello there", 1, 2);
    CHECK(t.longest("hello world!").chars == 11);
    CHECK(t.longest("hello world!").tenant == 0);
    CHECK(t.longest("hello th").chars == 8);
    CHECK(t.longest("hello th").tenant == 1);
    const auto shared = t.longest("hello x");
    CHECK(shared.chars == 6);
    CHECK(shared.tenant == 1); // both hold "hello ": the more recent one
    const std::vector<char> only0{1, 0};
    CHECK(t.longest("hello th", &only0).chars == 6);
    CHECK(t.longest("hello th", &only0).tenant == 0);
    CHECK(t.longest("xyz").tenant == -1);
    CHECK(t.size_of(0) == 11);
    CHECK(t.size_of(1) == 11);
    t.insert("help", 0, 3);
    CHECK(t.size_of(0) == 12); // "hel" + "lo " + "world" + "p"
    // Tenant 0's oldest leaf ("world", time 1) goes first.
    t.evict(0, 8);
    CHECK(t.size_of(0) <= 8);
    CHECK(t.longest("hello world", &only0).chars < 11);
    CHECK(t.longest("help", &only0).chars == 4);
    CHECK(t.longest("hello world").tenant == 1); // tenant 1 still holds its own path
}

TEST_CASE("sglang cache_aware: hit over the threshold, least load on a miss or imbalance",
          "[peers]") {
    sglang_cache_aware p;
    const auto a = make(std::string(300, 'a') + " first");
    auto pool = pool_of({0, 0, 0, 0});
    pool.replicas[0].inflight = 1; // the miss goes to the least loaded: replica 1
    CHECK(p.pick(a.req(), pool, 0) == 1);
    CHECK(p.last_reason() == "cache_miss");
    // Same prefix, different tail: match rate well above 0.3 -> replica 1 even when busier.
    pool.replicas[1].inflight = 5;
    const auto a2 = make(std::string(300, 'a') + " second");
    CHECK(p.pick(a2.req(), pool, 1) == 1);
    CHECK(p.last_reason() == "cache_hit");
    // A short match (under 30 % of the text) is a miss.
    const auto b = make(std::string(50, 'a') + std::string(300, 'b'));
    CHECK(p.pick(b.req(), pool, 2) != 1);
    CHECK(p.last_reason() == "cache_miss");
    // Imbalance: max - min > 64 and max > 1.5 min -> least loaded, the hit ignored.
    auto skewed = pool_of({10, 100, 10, 3});
    CHECK(p.pick(a2.req(), skewed, 3) == 3);
    CHECK(p.last_reason() == "imbalanced");
    // Not imbalanced when the gap is under 64 requests: the hit again, on the worker that took
    // the text last (replica 3, by the imbalanced pick: it was inserted there too).
    auto close = pool_of({10, 60, 10, 3});
    CHECK(p.pick(a2.req(), close, 4) == 3);
    CHECK(p.last_reason() == "cache_hit");
}

TEST_CASE("sglang cache_aware: its tree is cut to max_tree_size at each eviction interval",
          "[peers]") {
    sglang_cache_aware_knobs k;
    k.max_tree_size = 1000;
    k.eviction_interval_s = 10;
    sglang_cache_aware p(k);
    auto pool = pool_of({0});
    for (int i = 0; i < 20; ++i)
        p.pick(make(std::to_string(i) + std::string(200, 'z')).req(), pool, i * 0.1);
    CHECK(p.tree().size_of(0) > 1000);
    p.pick(make("later").req(), pool, 11);
    CHECK(p.tree().size_of(0) <= 1000 + 5);
}

TEST_CASE("sglang prefix_hash: the ring's worker within 1.25x the mean, else the least loaded",
          "[peers]") {
    sglang_prefix_hash p;
    const auto a = make(std::string(256, 'k') + " tail one");
    const auto a2 = make(std::string(256, 'k') + " another tail");
    auto pool = pool_of({0, 0, 0, 0});
    const std::size_t home = p.pick(a.req(), pool, 0);
    CHECK(p.last_reason() == "ring_hit");
    CHECK(p.pick(a2.req(), pool, 0) == home); // only the first 256 characters count
    // Home over (total + 1) / n * 1.25: the least-loaded worker under the bound.
    auto busy = pool_of({2, 2, 2, 2});
    busy.replicas[home].inflight = 8; // total 14: bound 15 / 4 * 1.25 = 4.7
    busy.replicas[(home + 1) % 4].inflight = 1;
    CHECK(p.pick(a.req(), busy, 0) == (home + 1) % 4);
    CHECK(p.last_reason() == "load_balance_walk");
}

TEST_CASE("kubeai chwbl: the first ring worker within ceil(1.25 x mean) takes it", "[peers]") {
    kubeai_chwbl p;
    const auto a = make(std::string(100, 'p') + "suffix one");
    const auto a2 = make(std::string(100, 'p') + "suffix two");
    auto pool = pool_of({0, 0, 0});
    const std::size_t home = p.pick(a.req(), pool, 0);
    CHECK(p.pick(a2.req(), pool, 0) == home);
    CHECK(p.last_reason() == "home");
    // Load 3 at home, 0 elsewhere: total 3, limit ceil(1.25 * 4 / 3) = 2: home is over.
    auto busy = pool_of({0, 0, 0});
    busy.replicas[home].inflight = 3;
    CHECK(p.pick(a.req(), busy, 0) != home);
    CHECK(p.last_reason() == "walked");
}

TEST_CASE("llm-d scorer: 3 x prefix + 2 x queue + 2 x free KV, the max wins", "[peers]") {
    llmd_scorer p(1);
    auto pool = pool_of({0, 0});
    for (auto& r : pool.replicas) {
        r.waiting = 0;
        r.kv_usage = 0.0;
        r.num_blocks = 1000;
    }
    const auto a = make(std::string(160, 'c'));
    const std::size_t first = p.pick(a.req(), pool, 0);
    p.on_routed(a.req(), first, 0);
    // Now the full match on `first` is worth 3; the other one's emptier queue and KV are worth
    // up to 4 only when both are far better.
    pool.replicas[first].waiting = 4;
    pool.replicas[1 - first].waiting = 0;
    CHECK(p.pick(a.req(), pool, 0) == first); // 3 + 0 + 2 = 5 against 0 + 2 + 2 = 4
    CHECK(p.last_scores()[first].prefix == Approx(1.0));
    CHECK(p.last_scores()[first].queue == Approx(0.0));
    CHECK(p.last_scores()[1 - first].queue == Approx(1.0));
    pool.replicas[first].kv_usage = 0.9; // 3 + 0 + 0.2 = 3.2 against 4
    CHECK(p.pick(a.req(), pool, 0) == 1 - first);
    CHECK(p.last_scores()[first].kv == Approx(0.1));
    // Its blocks: 16 characters each, the trailing partial one hashed too, at most 256.
    CHECK(p.hashes(std::string(40, 'x')).size() == 3);
    CHECK(p.hashes(std::string(16 * 300, 'x')).size() == 256);
}

TEST_CASE("dynamo kv: lowest prefill-after-overlap plus decode blocks", "[peers]") {
    dynamo_kv p(1, 16);
    auto pool = pool_of({0, 0, 0});
    const auto a = make(std::string(16 * 10 - 1, 'd')); // 10 blocks with BOS
    // Empty: every worker costs 10 + 10; ties at random.
    const std::size_t w = p.pick(a.req(1), pool, 0);
    CHECK(p.last_cost(0) == Approx(20));
    p.on_routed(a.req(1), w, 0);
    // The same prompt again: `w` has all 10 blocks cached but 10 active prefill and 10 decode
    // blocks: max(10 + 10 - 10, 0) + 20 = 30; the others 20.
    CHECK(p.pick(a.req(2), pool, 0) != w);
    CHECK(p.last_cost(w) == Approx(30));
    // After the first request's prefill: w costs max(0 + 10 - 10, 0) + 20 = 20, a tie.
    p.on_first_token(a.req(1), w, 0.1);
    p.pick(a.req(2), pool, 0.1);
    CHECK(p.last_cost(w) == Approx(20));
    // Done: w costs 0 + 10 = 10 and wins.
    p.on_done(a.req(1), w, 0.2);
    CHECK(p.pick(a.req(2), pool, 0.2) == w);
    CHECK(p.last_cost(w) == Approx(10));
    // The approximate index forgets after its 120 s TTL.
    CHECK(p.overlap(w, a.blocks, 100) == 10);
    CHECK(p.overlap(w, a.blocks, 121) == 0);
}

TEST_CASE("dynamo kv with KV events: the overlap is what a worker says it stores", "[peers]") {
    auto events = std::make_shared<router::precise_index>();
    dynamo_kv_knobs k;
    k.events = events;
    dynamo_kv p(1, 16, k);
    auto pool = pool_of({0, 0, 0});
    const auto a = make(std::string(16 * 10 - 1, 'e')); // 10 blocks with BOS
    // Worker 1 stores the prompt's first 6 blocks (one BlockStored, engine hashes of its own).
    const auto tokens = common::encode_prompt(a.text);
    common::kv_events::block_stored stored;
    stored.block_size = 16;
    for (std::uint64_t b = 0; b < 6; ++b)
        stored.block_hashes.push_back(common::kv_events::int_hash(1000 + b));
    stored.token_ids.assign(tokens.begin(), tokens.begin() + 6 * 16);
    common::kv_events::batch b;
    b.events.emplace_back(common::kv_events::all_blocks_cleared{});
    b.events.emplace_back(stored);
    events->apply(pool.replicas[1].id, b, common::root_block_hash);
    // Worker 1: max(0 + 10 - 6, 0) + 10 = 14; the others 20.
    CHECK(p.pick(a.req(1), pool, 0) == 1);
    CHECK(p.last_cost(1) == Approx(14));
    CHECK(p.last_cost(0) == Approx(20));
    // Routing credits nothing: worker 0 holds nothing until its events say so.
    p.on_routed(a.req(1), 0, 0);
    CHECK(p.overlap(0, a.blocks, 0) == 0);
    CHECK(p.overlap(1, a.blocks, 0) == 6);
    // A removal takes the block and everything after it out of the match.
    common::kv_events::batch r;
    r.events.emplace_back(
        common::kv_events::block_removed{{common::kv_events::int_hash(1003)}, std::nullopt});
    events->apply(pool.replicas[1].id, r, common::root_block_hash);
    CHECK(p.overlap(1, a.blocks, 0) == 3);
    // No TTL: the events, not the clock, say when it is gone.
    CHECK(p.overlap(1, a.blocks, 1000) == 3);
}

TEST_CASE("production-stack prefixaware: the longest 128-character chunk path, else lowest QPS",
          "[peers]") {
    prodstack_prefixaware p(1);
    auto pool = pool_of({0, 0, 0});
    const auto a = make(std::string(300, 'e'));
    const std::size_t first = p.pick(a.req(), pool, 0);
    CHECK(p.last_reason() == "lowest_qps");
    p.on_routed(a.req(), first, 0);
    // A prompt sharing the first 128-character chunk goes there, whatever the load.
    pool.replicas[first].inflight = 50;
    const auto b = make(std::string(128, 'e') + std::string(200, 'f'));
    CHECK(p.pick(b.req(), pool, 1) == first);
    CHECK(p.last_reason() == "prefix_match");
    // No shared chunk: the endpoint with the fewest requests in the last 60 s.
    const auto c = make(std::string(300, 'g'));
    CHECK(p.pick(c.req(), pool, 2) != first);
    CHECK(p.chunks(std::string(300, 'e')).size() == 3);
}

TEST_CASE("power of two: the less loaded of two distinct random workers", "[peers]") {
    power_of_two p(7);
    auto pool = pool_of({5, 1});
    for (int i = 0; i < 20; ++i)
        CHECK(p.pick(make("x").req(), pool, 0) == 1);
    auto three = pool_of({0, 9, 9});
    int zero = 0;
    for (int i = 0; i < 300; ++i)
        zero += p.pick(make("x").req(), three, 0) == 0 ? 1 : 0;
    // Worker 0 is in 2 of 3 pairs: about 200 of 300.
    CHECK(zero > 170);
    CHECK(zero < 230);
}
