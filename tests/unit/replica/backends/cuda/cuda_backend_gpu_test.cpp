// The CUDA backend against the CPU reference, on a GPU: these tests make lanes_gpu_tests, which
// ctest reports as skipped where no device is usable (tests/gpu_main.cpp).
//
// Tolerances: with fp32 storage both backends compute the same function in fp32 and differ only
// in summation order, so logits agree to 2e-3 (absolute; logits here are O(1)) and greedy tokens
// are identical (or a near-tie: the CPU's logit for the CUDA pick within 2 · 2e-3 of its best,
// where summation order may decide). With bf16 storage (weights, KV cache and GEMM inputs rounded
// to 8 mantissa bits) the logits' relative RMS error stays under 5 % and greedy tokens, fed the
// CPU's choice each step, agree at least 80 % of the time.
#include "replica/backends/backend.hpp"
#include "replica/backends/cuda/cuda_backend.hpp"
#include "replica/engine/engine.hpp"
#include "replica/engine/sampler.hpp"

#include <boost/asio.hpp>
#include <catch2/catch.hpp>

#include <cmath>
#include <initializer_list>

using namespace lanes;
using namespace lanes::replica;

namespace {

constexpr float fp32_logit_tolerance = 2e-3f;
constexpr double bf16_relative_rms = 0.05;
constexpr double bf16_token_agreement = 0.8;
constexpr std::size_t block_size = 16;

std::unique_ptr<backend> build(backend_kind kind, const model_weights& weights,
                               std::size_t num_blocks, const std::string& dtype = "fp32",
                               bool graphs = true, std::size_t max_batched_tokens = 2048) {
    backend_options options;
    options.kind = kind;
    options.num_blocks = num_blocks;
    options.block_size = block_size;
    options.cuda_dtype = dtype;
    options.cuda_graphs = graphs;
    options.max_batched_tokens = max_batched_tokens;
    std::string error;
    auto b = make_backend(options, weights, error);
    INFO(error);
    REQUIRE(b);
    return b;
}

float max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
    REQUIRE(a.size() == b.size());
    float worst = 0.0f;
    for (std::size_t i = 0; i < a.size(); ++i)
        worst = std::max(worst, std::fabs(a[i] - b[i]));
    return worst;
}

double relative_rms(const std::vector<float>& got, const std::vector<float>& want) {
    REQUIRE(got.size() == want.size());
    double err = 0.0, ref = 0.0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        err += (static_cast<double>(got[i]) - want[i]) * (static_cast<double>(got[i]) - want[i]);
        ref += static_cast<double>(want[i]) * want[i];
    }
    return std::sqrt(err / ref);
}

common::token_id greedy(const std::vector<float>& logits, std::size_t position) {
    return sample(logits, sample_options{0.0, 1.0, 0, false}, position);
}

// Whether `got` (the CUDA pick) agrees with `want` (the CPU's) under the CPU's logits: the same
// token, or a near-tie that fp32 summation order may decide either way.
bool same_or_tie(common::token_id got, common::token_id want,
                 const std::vector<float>& cpu_logits) {
    return got == want || cpu_logits[static_cast<std::size_t>(got)] >=
                              cpu_logits[static_cast<std::size_t>(want)] - 2 * fp32_logit_tolerance;
}

// A sequence with its own run of blocks.
struct seq {
    std::vector<common::token_id> tokens;
    std::vector<block_id> blocks;
    std::size_t computed = 0;
};

std::vector<seq> make_sequences(std::initializer_list<std::size_t> prompt_lengths,
                                std::size_t blocks_each) {
    std::vector<seq> out;
    block_id next = 0;
    for (const std::size_t n : prompt_lengths) {
        seq s;
        std::string text(n - 1, ' ');
        for (std::size_t i = 0; i + 1 < n; ++i)
            text[i] = static_cast<char>('a' + (i * 5 + out.size() * 3) % 26);
        s.tokens = common::encode_prompt(text);
        for (std::size_t b = 0; b < blocks_each; ++b)
            s.blocks.push_back(next++);
        out.push_back(std::move(s));
    }
    return out;
}

// One step for the sequences in `active`: each computes everything it has not computed yet.
std::vector<std::vector<float>> step(backend& b, std::vector<seq>& seqs,
                                     const std::vector<std::size_t>& active) {
    std::vector<batch_entry> batch;
    for (const std::size_t i : active) {
        const seq& s = seqs[i];
        batch_entry e;
        e.tokens = std::span(s.tokens).subspan(s.computed);
        e.start_pos = s.computed;
        e.block_table = s.blocks;
        e.want_logits = true;
        batch.push_back(e);
    }
    std::vector<std::vector<float>> logits;
    REQUIRE(b.forward(batch, logits));
    REQUIRE(logits.size() == active.size());
    return logits;
}

struct parity {
    float worst_fp32 = 0.0f;     // largest |Δlogit| over every step
    double worst_rel_rms = 0.0;  // over the prefill and the first 4 decode steps
    std::size_t tokens = 0;      // greedy tokens compared
    std::size_t same_tokens = 0; // of which the CUDA backend chose the CPU's
};

// Prefills three sequences of different lengths in one batch, then decodes `steps` tokens,
// feeding both backends the CPU's greedy choice. The third sequence stops after half the steps,
// so the decode batch changes size (graph buckets 4 then 2, with padding rows).
parity run_parity(const model_weights& weights, const std::string& dtype, bool graphs,
                  std::size_t steps) {
    auto cpu = build(backend_kind::cpu, weights, 48);
    auto gpu = build(backend_kind::cuda, weights, 48, dtype, graphs);
    auto cpu_seqs = make_sequences({5, 23, 40}, 16);
    auto gpu_seqs = cpu_seqs;
    parity p;
    std::vector<std::size_t> active{0, 1, 2};
    for (std::size_t s = 0; s <= steps; ++s) {
        if (s == steps / 2)
            active.pop_back();
        const auto want = step(*cpu, cpu_seqs, active);
        const auto got = step(*gpu, gpu_seqs, active);
        for (std::size_t k = 0; k < active.size(); ++k) {
            p.worst_fp32 = std::max(p.worst_fp32, max_abs_diff(got[k], want[k]));
            if (s <= 4)
                p.worst_rel_rms = std::max(p.worst_rel_rms, relative_rms(got[k], want[k]));
            seq& c = cpu_seqs[active[k]];
            seq& g = gpu_seqs[active[k]];
            const auto tok = greedy(want[k], c.tokens.size());
            const auto picked = greedy(got[k], g.tokens.size());
            ++p.tokens;
            p.same_tokens +=
                (dtype == "fp32" ? same_or_tie(picked, tok, want[k]) : picked == tok) ? 1 : 0;
            c.computed = c.tokens.size();
            g.computed = g.tokens.size();
            c.tokens.push_back(tok);
            g.tokens.push_back(tok);
        }
    }
    return p;
}

parity run_parity(const std::string& preset_name, const std::string& dtype, bool graphs,
                  std::size_t steps) {
    return run_parity(make_weights(*preset(preset_name), 3), dtype, graphs, steps);
}

// The checkpoint families' variants on small shapes: Qwen2's q/k/v biases, Qwen3's q/k norms with
// a head_dim twice hidden / heads, Llama 3's scaled RoPE table with a tied head, and a Qwen-sized
// vocabulary (151,936 ids: the logits buffers are sized by sequences, not tokens).
model_weights variant_weights(const std::string& family) {
    model_config c = *preset("tiny");
    if (family == "qwen3") {
        c.d_model = 128, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 64, c.qk_norm = true;
    } else if (family == "qwen2") {
        c.qkv_bias = true;
    } else if (family == "llama3") {
        c.rope_theta = 500000.0f, c.rope = model_config::rope_kind::llama3;
        c.rope_factor = 8.0f, c.rope_original_max_positions = 64.0f, c.tie_embeddings = true;
    } else if (family == "vocab") {
        c.vocab = 151936;
    }
    return make_weights(c, 5); // with the variant's tensors, the head tied
}

} // namespace

TEST_CASE("cuda: checkpoint families' variants match the cpu backend", "[gpu]") {
    for (const char* family : {"qwen2", "qwen3", "llama3", "vocab"}) {
        const model_weights w = variant_weights(family);
        INFO("variant " << family);
        const parity fp32 = run_parity(w, "fp32", true, 32);
        CHECK(fp32.worst_fp32 <= fp32_logit_tolerance);
        CHECK(fp32.same_tokens == fp32.tokens);
        const parity bf16 = run_parity(w, "bf16", true, 32);
        CHECK(bf16.worst_rel_rms <= bf16_relative_rms);
        CHECK(static_cast<double>(bf16.same_tokens) >=
              bf16_token_agreement * static_cast<double>(bf16.tokens));
    }
}

TEST_CASE("cuda fp32: greedy decoding and logits match the cpu backend", "[gpu]") {
    for (const char* name : {"tiny", "small"}) {
        for (const bool graphs : {true, false}) {
            INFO("preset " << name << ", cuda graphs " << graphs);
            const parity p = run_parity(name, "fp32", graphs, 64);
            CHECK(p.worst_fp32 <= fp32_logit_tolerance);
            CHECK(p.tokens > 3 * 32 + 2 * 32);
            CHECK(p.same_tokens == p.tokens);
        }
    }
}

TEST_CASE("cuda bf16: logits close to the cpu backend's, greedy tokens mostly agree", "[gpu]") {
    for (const char* name : {"tiny", "small"}) {
        INFO("preset " << name);
        const parity p = run_parity(name, "bf16", true, 64);
        CHECK(p.worst_rel_rms <= bf16_relative_rms);
        CHECK(static_cast<double>(p.same_tokens) >=
              bf16_token_agreement * static_cast<double>(p.tokens));
    }
}

TEST_CASE("cuda: a prefill over cached prefix blocks computes only the new tokens, correctly",
          "[gpu]") {
    for (const char* name : {"tiny", "small"}) {
        INFO("preset " << name);
        const auto weights = make_weights(*preset(name), 11);
        auto gpu = build(backend_kind::cuda, weights, 32);
        auto cpu = build(backend_kind::cpu, weights, 32);
        // A: 80 tokens in blocks 0..4. B: A's first 64 tokens (blocks 0..3, cached), then 20 of
        // its own in blocks 5 and 6.
        auto seqs = make_sequences({80}, 5);
        seq b;
        b.tokens.assign(seqs[0].tokens.begin(), seqs[0].tokens.begin() + 64);
        for (int i = 0; i < 20; ++i)
            b.tokens.push_back(static_cast<common::token_id>('A' + i));
        b.blocks = {0, 1, 2, 3, 5, 6};
        seqs.push_back(b);
        step(*gpu, seqs, {0});
        seqs[1].computed = 64; // the prefix hit: only tokens 64..83 are handed to the backend
        const auto hit = step(*gpu, seqs, {1});

        seq cold = b; // the same sequence from scratch on the reference, in its own blocks
        cold.blocks = {10, 11, 12, 13, 14, 15};
        std::vector<seq> reference{cold};
        const auto want = step(*cpu, reference, {0});
        CHECK(max_abs_diff(hit[0], want[0]) <= fp32_logit_tolerance);

        // Chunked prefill (7 tokens a step: chunks that start and end inside blocks) agrees too.
        auto fresh = build(backend_kind::cuda, weights, 32);
        std::vector<seq> chunked{cold};
        std::vector<float> last;
        const auto full = chunked[0].tokens;
        for (std::size_t end = 7;; end = std::min(end + 7, full.size())) {
            chunked[0].tokens.assign(full.begin(), full.begin() + static_cast<long>(end));
            last = step(*fresh, chunked, {0})[0];
            chunked[0].computed = end;
            if (end == full.size())
                break;
        }
        CHECK(max_abs_diff(last, want[0]) <= fp32_logit_tolerance);
    }
}

TEST_CASE("cuda: decode graphs are captured again after a step grows the buffers", "[gpu]") {
    const auto weights = make_weights(*preset("tiny"), 7);
    auto cpu = build(backend_kind::cpu, weights, 64);
    // max_batched_tokens 1: buffers for 256 rows (the largest graph bucket) until a step needs
    // more.
    auto gpu = build(backend_kind::cuda, weights, 64, "fp32", true, 1);
    auto cpu_seqs = make_sequences({5, 23, 300}, 21);
    auto gpu_seqs = cpu_seqs;
    float worst = 0.0f;
    auto advance = [&](const std::vector<std::size_t>& active) {
        const auto want = step(*cpu, cpu_seqs, active);
        const auto got = step(*gpu, gpu_seqs, active);
        for (std::size_t k = 0; k < active.size(); ++k) {
            worst = std::max(worst, max_abs_diff(got[k], want[k]));
            seq& c = cpu_seqs[active[k]];
            seq& g = gpu_seqs[active[k]];
            const auto tok = greedy(want[k], c.tokens.size());
            c.computed = c.tokens.size();
            g.computed = g.tokens.size();
            c.tokens.push_back(tok);
            g.tokens.push_back(tok);
        }
    };
    for (int i = 0; i < 4; ++i) // prefill, then bucket 2 eager, captured, replayed
        advance({0, 1});
    advance({2});               // a 300-token prefill: the buffers grow and the graphs are dropped
    for (int i = 0; i < 3; ++i) // bucket 2 again, over the new buffers
        advance({0, 1});
    for (int i = 0; i < 3; ++i) // bucket 4 with a padding row
        advance({0, 1, 2});
    CHECK(worst <= fp32_logit_tolerance);
}

namespace {

struct outcome {
    std::string text;
    stream_event last;
};

engine_request greedy_request(std::string prompt, std::int64_t max_tokens) {
    engine_request r;
    r.prompt = common::encode_prompt(prompt);
    r.sampling.max_tokens = max_tokens;
    r.sampling.temperature = 0.0;
    r.sampling.ignore_eos = true;
    return r;
}

// Submits the requests (before start() when `start` is set, so one step admits them all) and
// waits for every one to finish.
std::vector<outcome> run_requests(engine& eng, const std::vector<engine_request>& requests,
                                  bool start) {
    boost::asio::io_context io;
    std::vector<outcome> out(requests.size());
    for (std::size_t i = 0; i < requests.size(); ++i) {
        auto stream = std::make_shared<request_stream>(io.get_executor());
        REQUIRE(eng.submit(requests[i], stream) == submit_status::accepted);
        boost::asio::co_spawn(
            io,
            [stream, &o = out[i]]() -> boost::asio::awaitable<void> {
                for (;;) {
                    stream_event ev = co_await stream->next();
                    o.text += ev.text;
                    if (ev.finished) {
                        o.last = ev;
                        co_return;
                    }
                }
            },
            boost::asio::detached);
    }
    if (start)
        eng.start();
    io.run();
    return out;
}

struct accounting {
    std::vector<outcome> results;
    std::vector<double> counters;
    load_snapshot load;
};

// One fixed request sequence: three concurrent requests sharing a prefix, then, one at a time,
// prefix hits, a prompt long enough to evict cached blocks, and a repeat after the eviction.
accounting run_sequence(backend_kind kind) {
    replica_config cfg;
    cfg.backend = std::string(to_string(kind));
    cfg.preset = "tiny";
    cfg.kv_blocks = 40;
    cfg.seed = 5;
    cfg.cuda_dtype = "fp32";
    replica_metrics m("m", 16, 40);
    engine eng(cfg, m, build_backend(cfg, kind));
    const std::string shared(150, 'p');
    accounting a;
    auto add = [&](std::vector<outcome> r) {
        a.results.insert(a.results.end(), r.begin(), r.end());
    };
    add(run_requests(eng,
                     {greedy_request(shared + "first tail", 30),
                      greedy_request(shared + "second tail, longer", 20),
                      greedy_request("an unrelated prompt", 25)},
                     true));
    add(run_requests(eng, {greedy_request(shared + "third", 12)}, false));
    add(run_requests(eng, {greedy_request(shared + "first tail", 8)}, false));
    add(run_requests(eng, {greedy_request(std::string(500, 'q'), 10)}, false));
    add(run_requests(eng, {greedy_request(shared + "first tail", 8)}, false));
    eng.stop(); // joins the engine thread, which publishes its gauges one last time
    a.counters = {
        m.prefix_queries.value(), m.prefix_hits.value(),       m.preemptions.value(),
        m.prompt_tokens.value(),  m.generation_tokens.value(), m.kv_usage.value(),
        m.running.value(),        m.waiting.value(),           m.success("length").value()};
    a.load = eng.load();
    return a;
}

} // namespace

TEST_CASE("engine on cuda: same text, KV and prefix-cache accounting and metrics as on cpu",
          "[gpu]") {
    const accounting cpu = run_sequence(backend_kind::cpu);
    const accounting gpu = run_sequence(backend_kind::cuda);
    REQUIRE(cpu.results.size() == gpu.results.size());
    for (std::size_t i = 0; i < cpu.results.size(); ++i) {
        INFO("request " << i);
        CHECK(gpu.results[i].text == cpu.results[i].text);
        CHECK(gpu.results[i].last.cached_tokens == cpu.results[i].last.cached_tokens);
        CHECK(gpu.results[i].last.completion_tokens == cpu.results[i].last.completion_tokens);
        CHECK(gpu.results[i].last.finish == cpu.results[i].last.finish);
    }
    CHECK(gpu.counters == cpu.counters);
    CHECK(gpu.load.prefix_cache_hits == cpu.load.prefix_cache_hits);
    CHECK(gpu.load.prefix_cache_queries == cpu.load.prefix_cache_queries);
    CHECK(gpu.load.kv_usage == cpu.load.kv_usage);
    // The sequence really exercised the prefix cache: hits on the shared prefix and the repeat.
    CHECK(cpu.results[3].last.cached_tokens >= 144);
    CHECK(cpu.counters[1] > 0);
}
