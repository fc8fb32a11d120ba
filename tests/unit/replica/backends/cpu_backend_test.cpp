// The reference backend: its two kernels against hand-computed values, and forward over the tiny
// model (one logits row per entry that asks, deterministic for a seed, chunking and batching leave
// the numbers alone).
#include "replica/backends/cpu_backend.hpp"

#include <catch2/catch.hpp>

#include <cmath>
#include <numeric>

using namespace lanes;
using namespace lanes::replica;

namespace {

// A cpu backend over the tiny preset's weights, one OpenBLAS thread, blocks of 16 tokens.
std::unique_ptr<backend> tiny_cpu(std::uint64_t seed, std::size_t blocks = 8) {
    backend_options options;
    options.kind = backend_kind::cpu;
    options.num_blocks = blocks;
    options.block_size = 16;
    std::string error;
    auto b = make_backend(options, make_weights(*preset("tiny"), seed), error);
    REQUIRE(b);
    return b;
}

std::vector<common::token_id> tokens_of(std::size_t n) {
    std::vector<common::token_id> t(n);
    for (std::size_t i = 0; i < n; ++i)
        t[i] = static_cast<common::token_id>('a' + i % 26);
    t[0] = common::bos_token;
    return t;
}

// The logits of one forward pass over a single entry.
std::vector<float> last_logits(backend& b, std::span<const common::token_id> tokens,
                               std::size_t start, std::span<const block_id> table) {
    std::vector<std::vector<float>> out;
    const batch_entry e{tokens, start, table, true};
    REQUIRE(b.forward(std::span(&e, 1), out));
    REQUIRE(out.size() == 1);
    return out[0];
}

void check_close(const std::vector<float>& a, const std::vector<float>& b, double margin) {
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i)
        REQUIRE(a[i] == Approx(b[i]).margin(margin));
}

} // namespace

TEST_CASE("rms_norm: x / sqrt(mean(x^2) + eps) * gain", "[cpu_backend]") {
    const float x[4] = {1, 2, 3, 4}; // mean square 7.5
    const float ones[4] = {1, 1, 1, 1};
    float out[4];
    rms_norm(x, ones, out, 4, 0.0f);
    CHECK(out[0] == Approx(0.3651484));
    CHECK(out[1] == Approx(0.7302967));
    CHECK(out[2] == Approx(1.0954451));
    CHECK(out[3] == Approx(1.4605935));
    const float gain[4] = {2, 1, 0.5f, 0};
    rms_norm(x, gain, out, 4, 0.0f);
    CHECK(out[0] == Approx(0.7302967));
    CHECK(out[1] == Approx(0.7302967));
    CHECK(out[2] == Approx(0.5477226));
    CHECK(out[3] == 0.0f);
    rms_norm(x, ones, out, 4, 1.0f); // eps inside the root: 1 / sqrt(8.5)
    CHECK(out[0] == Approx(0.3429972));
    CHECK(out[3] == Approx(4 * 0.3429972));
    // In place (the backend never does it, but nothing forbids it).
    float y[2] = {3, -4}; // mean square 12.5
    rms_norm(y, ones, y, 2, 0.0f);
    CHECK(y[0] == Approx(3 / std::sqrt(12.5)));
    CHECK(y[1] == Approx(-4 / std::sqrt(12.5)));
}

TEST_CASE("apply_rope: rotate-half pairs (i, i + d/2) by pos * theta^(-2i/d)", "[cpu_backend]") {
    float v[4] = {1, 0, 0, 1};
    apply_rope(v, 4, 0, 10000.0f); // position 0: no rotation
    CHECK(v[0] == 1.0f);
    CHECK(v[1] == 0.0f);
    CHECK(v[2] == 0.0f);
    CHECK(v[3] == 1.0f);
    // Position 1, d = 4: pair (0, 2) turns by 1 rad, pair (1, 3) by 10000^(-1/2) = 0.01 rad.
    apply_rope(v, 4, 1, 10000.0f);
    CHECK(v[0] == Approx(0.5403023));  // cos 1
    CHECK(v[2] == Approx(0.8414710));  // sin 1
    CHECK(v[1] == Approx(-0.0099998)); // -sin 0.01
    CHECK(v[3] == Approx(0.9999500));  // cos 0.01
    float w[4] = {1, 0, 0, 1};
    apply_rope(w, 4, 3, 10000.0f);
    CHECK(w[0] == Approx(-0.9899925)); // cos 3
    CHECK(w[2] == Approx(0.1411200));  // sin 3
    CHECK(w[1] == Approx(-0.0299955)); // -sin 0.03
}

TEST_CASE("apply_rope: a rotation, so q·k depends only on the distance", "[cpu_backend]") {
    std::vector<float> q(16), k(16);
    for (std::size_t i = 0; i < 16; ++i) {
        q[i] = 0.1f * static_cast<float>(i) - 0.7f;
        k[i] = std::sin(static_cast<float>(i));
    }
    const auto dot_at = [&](std::size_t qpos, std::size_t kpos) {
        auto a = q, b = k;
        apply_rope(a.data(), 16, qpos, 10000.0f);
        apply_rope(b.data(), 16, kpos, 10000.0f);
        return std::inner_product(a.begin(), a.end(), b.begin(), 0.0);
    };
    CHECK(dot_at(7, 3) == Approx(dot_at(4, 0)).margin(1e-4));
    CHECK(dot_at(12, 10) == Approx(dot_at(2, 0)).margin(1e-4));
    CHECK(dot_at(5, 0) != Approx(dot_at(1, 0)).margin(1e-3)); // distance matters
    auto r = q;
    apply_rope(r.data(), 16, 9, 10000.0f);
    CHECK(std::inner_product(r.begin(), r.end(), r.begin(), 0.0) ==
          Approx(std::inner_product(q.begin(), q.end(), q.begin(), 0.0)).epsilon(1e-5));
}

TEST_CASE("cpu forward: one vocab-size row per entry that wants logits, in batch order",
          "[cpu_backend]") {
    auto b = tiny_cpu(1);
    CHECK(b->name() == "cpu");
    const auto a = tokens_of(6), mid = tokens_of(20), c = tokens_of(3);
    const std::vector<block_id> ta = {0}, tm = {1, 2}, tc = {3};
    const std::vector<batch_entry> batch = {
        {a, 0, ta, true}, {mid, 0, tm, false}, {c, 0, tc, true}};
    std::vector<std::vector<float>> logits;
    REQUIRE(b->forward(batch, logits));
    REQUIRE(logits.size() == 2);
    for (const auto& row : logits) {
        REQUIRE(row.size() == common::vocab_size);
        for (float v : row)
            REQUIRE(std::isfinite(v));
    }
    CHECK(logits[0] != logits[1]);
    // Each row is its own entry's: the same entries alone, on a fresh backend (within 1e-4).
    auto alone = tiny_cpu(1);
    check_close(logits[0], last_logits(*alone, a, 0, ta), 1e-4);
    check_close(logits[1], last_logits(*alone, c, 0, tc), 1e-4);
    // An empty batch computes nothing and appends nothing.
    logits.clear();
    CHECK(b->forward({}, logits));
    CHECK(logits.empty());
}

TEST_CASE("cpu forward: deterministic for a seed, different for another", "[cpu_backend]") {
    const auto prompt = tokens_of(12);
    const std::vector<block_id> table = {0};
    auto one = tiny_cpu(7), again = tiny_cpu(7), other = tiny_cpu(8);
    const auto l1 = last_logits(*one, prompt, 0, table);
    CHECK(l1 == last_logits(*again, prompt, 0, table));
    const auto l2 = last_logits(*other, prompt, 0, table);
    double diff = 0;
    for (std::size_t i = 0; i < l1.size(); ++i)
        diff = std::max(diff, static_cast<double>(std::abs(l1[i] - l2[i])));
    CHECK(diff > 0.1);
    // Ids past the vocabulary read the last row (EOS) instead of running off the table.
    const std::vector<common::token_id> past = {common::bos_token, 5000};
    const std::vector<common::token_id> eos = {common::bos_token, common::eos_token};
    auto x = tiny_cpu(7), y = tiny_cpu(7);
    CHECK(last_logits(*x, past, 0, table) == last_logits(*y, eos, 0, table));
}

TEST_CASE("cpu forward: a prefill in two chunks, then a decode, matches one pass (1e-4)",
          "[cpu_backend]") {
    const auto prompt = tokens_of(41);
    const std::vector<block_id> table = {5, 2, 7}; // not in order: the table is followed
    auto whole = tiny_cpu(3);
    const auto one_pass =
        last_logits(*whole, std::span(prompt).first(40), 0, std::span(table).first(3));
    auto chunked = tiny_cpu(3);
    std::vector<std::vector<float>> none;
    const batch_entry first{std::span(prompt).first(24), 0, table, false};
    REQUIRE(chunked->forward(std::span(&first, 1), none));
    CHECK(none.empty());
    const auto two_chunks = last_logits(*chunked, std::span(prompt).subspan(24, 16), 24, table);
    check_close(two_chunks, one_pass, 1e-4);
    // The next token as a decode step over the cached 40 against all 41 in one pass.
    const auto decoded = last_logits(*chunked, std::span(prompt).subspan(40, 1), 40, table);
    auto fresh = tiny_cpu(3);
    check_close(decoded, last_logits(*fresh, prompt, 0, table), 1e-4);
    CHECK(decoded != two_chunks);
}

TEST_CASE("cpu forward: the checkpoint families' variants keep chunking, decode and batching "
          "exact (1e-4)",
          "[cpu_backend]") {
    // Qwen2's biases, Qwen3's q/k norms with head_dim twice hidden / heads, llama3 RoPE scaling.
    for (const char* family : {"qwen2", "qwen3", "llama3"}) {
        INFO("variant " << family);
        model_config c = *preset("tiny");
        const std::string f = family;
        if (f == "qwen3")
            c.n_heads = 2, c.n_kv_heads = 1, c.head_dim = 64, c.qk_norm = true;
        if (f == "qwen2")
            c.qkv_bias = true;
        if (f == "llama3")
            c.rope = model_config::rope_kind::llama3, c.rope_factor = 8.0f,
            c.rope_original_max_positions = 32.0f, c.rope_theta = 500000.0f;
        const model_weights w = make_weights(c, 4); // with the variant's tensors
        auto make = [&] { return std::make_unique<cpu_backend>(w, 16, 16); };
        const auto prompt = tokens_of(41);
        const std::vector<block_id> table = {5, 2, 7};
        auto whole = make();
        const auto one_pass = last_logits(*whole, prompt, 0, table);
        // Chunks of 24 and 16, then the 41st token as a decode step.
        auto chunked = make();
        std::vector<std::vector<float>> none;
        const batch_entry first{std::span(prompt).first(24), 0, table, false};
        REQUIRE(chunked->forward(std::span(&first, 1), none));
        last_logits(*chunked, std::span(prompt).subspan(24, 16), 24, table);
        check_close(last_logits(*chunked, std::span(prompt).subspan(40, 1), 40, table), one_pass,
                    1e-4);
        // A prefix hit: a second sequence reusing blocks 5 and 2 (32 tokens) computes the rest.
        const std::vector<block_id> other = {5, 2, 9};
        check_close(last_logits(*chunked, std::span(prompt).subspan(32), 32, other), one_pass,
                    1e-4);
        // In a batch with another sequence, the same numbers.
        auto batched = make();
        const auto short_prompt = tokens_of(7);
        const std::vector<block_id> short_table = {11};
        const batch_entry both[2] = {{short_prompt, 0, short_table, true},
                                     {prompt, 0, table, true}};
        std::vector<std::vector<float>> out;
        REQUIRE(batched->forward(both, out));
        REQUIRE(out.size() == 2);
        check_close(out[1], one_pass, 1e-4);
    }
}
