// The model's shapes and its seeded weights: presets, the parameter count, KV bytes per token, and
// weights that depend only on (seed, tensor, index).
#include "replica/backends/model.hpp"

#include <catch2/catch.hpp>

#include <cmath>

using namespace lanes::replica;

namespace {

// Every value the weights hold, counted from the tensors make_weights builds.
std::size_t stored_values(const model_weights& w) {
    std::size_t n = w.embedding.size() + w.lm_head.size() + w.final_norm.size();
    for (const auto& l : w.layers)
        n += l.attn_norm.size() + l.wqkv.size() + l.wo.size() + l.mlp_norm.size() +
             l.w_gate_up.size() + l.w_down.size();
    return n;
}

} // namespace

TEST_CASE("presets: the four names and their shapes, and anything else is unknown", "[model]") {
    const auto tiny = preset("tiny");
    REQUIRE(tiny);
    CHECK(tiny->name == "tiny");
    CHECK(tiny->d_model == 64);
    CHECK(tiny->n_layers == 2);
    CHECK(tiny->n_heads == 4);
    CHECK(tiny->n_kv_heads == 2);
    CHECK(tiny->head_dim == 16);
    CHECK(tiny->d_ff == 128);
    CHECK(tiny->vocab == 258); // bytes, BOS and EOS
    CHECK(tiny->q_dim() == 64);
    CHECK(tiny->kv_dim() == 32);
    const auto one_b = preset("1b"); // TinyLlama's shape
    REQUIRE(one_b);
    CHECK(one_b->d_model == 2048);
    CHECK(one_b->n_layers == 22);
    CHECK(one_b->n_heads == 32);
    CHECK(one_b->n_kv_heads == 4);
    CHECK(one_b->d_ff == 5632);
    REQUIRE(preset("small"));
    CHECK(preset("small")->n_layers == 8);
    REQUIRE(preset("base"));
    CHECK(preset("base")->d_model == 768);
    CHECK_FALSE(preset("huge"));
    CHECK_FALSE(preset("Tiny"));
    CHECK_FALSE(preset(""));
}

TEST_CASE("parameter_count: tiny by hand, the others at their advertised sizes", "[model]") {
    const auto tiny = *preset("tiny");
    // embedding and LM head 258 x 64 each, the final norm 64; per layer two norms of 64, wqkv 64 x
    // (64 + 2 x 32), wo 64 x 64, gate/up 64 x 256, down 128 x 64.
    const std::size_t per_layer = 2 * 64 + 64 * 128 + 64 * 64 + 64 * 256 + 128 * 64;
    CHECK(per_layer == 36992);
    CHECK(tiny.parameter_count() == 2 * 258 * 64 + 2 * per_layer + 64);
    CHECK(tiny.parameter_count() == 107072);
    // The count is what make_weights stores (maintained vs recomputed).
    CHECK(stored_values(make_weights(tiny, 3)) == tiny.parameter_count());
    CHECK(preset("small")->parameter_count() == 23865856); // ~25M
    CHECK(preset("base")->parameter_count() == 121529088); // ~125M
    CHECK(preset("1b")->parameter_count() == 970033152);   // ~1B
}

TEST_CASE("kv_bytes_per_token: K and V of every layer at the given width", "[model]") {
    const auto tiny = *preset("tiny");
    CHECK(tiny.kv_bytes_per_token(4) == 2 * 2 * 32 * 4); // 512
    CHECK(tiny.kv_bytes_per_token(2) == 256);
    CHECK(preset("1b")->kv_bytes_per_token(2) == 2 * 22 * 256 * 2); // 22528
}

TEST_CASE("make_weights: shapes, unit norms and values within their fan-in bound", "[model]") {
    const auto cfg = *preset("tiny");
    const auto w = make_weights(cfg, 11);
    CHECK(w.cfg.name == "tiny");
    CHECK(w.embedding.size() == 258 * 64);
    CHECK(w.lm_head.size() == 64 * 258);
    REQUIRE(w.layers.size() == 2);
    const auto& l = w.layers[1];
    CHECK(l.wqkv.size() == 64 * 128);
    CHECK(l.wo.size() == 64 * 64);
    CHECK(l.w_gate_up.size() == 64 * 256);
    CHECK(l.w_down.size() == 128 * 64);
    CHECK(l.attn_norm == std::vector<float>(64, 1.0f));
    CHECK(l.mlp_norm == std::vector<float>(64, 1.0f));
    CHECK(w.final_norm == std::vector<float>(64, 1.0f));
    const auto max_abs = [](const std::vector<float>& v) {
        float m = 0;
        for (float x : v)
            m = std::max(m, std::abs(x));
        return m;
    };
    CHECK(max_abs(w.embedding) <= 1.0f);
    CHECK(max_abs(w.embedding) > 0.99f); // uniform over ±1: 16512 draws reach the edge
    CHECK(max_abs(l.wqkv) <= std::sqrt(3.0f / 64.0f));
    CHECK(max_abs(l.w_down) <= std::sqrt(3.0f / 128.0f));
    CHECK(max_abs(l.w_down) > 0.99f * std::sqrt(3.0f / 128.0f));
}

TEST_CASE("make_weights: each value is weight_value(seed, tensor, index) scaled", "[model]") {
    const auto cfg = *preset("tiny");
    const auto w = make_weights(cfg, 5);
    // Tensors are numbered in order: embedding 0, then per layer wqkv, wo, gate/up, down, and the
    // LM head last (1 + 4 x 2 = 9).
    CHECK(w.embedding[0] == weight_value(5, 0, 0));
    CHECK(w.embedding[777] == weight_value(5, 0, 777));
    CHECK(w.layers[0].wqkv[3] == weight_value(5, 1, 3) * std::sqrt(3.0f / 64.0f));
    CHECK(w.layers[1].w_down[100] == weight_value(5, 8, 100) * std::sqrt(3.0f / 128.0f));
    CHECK(w.lm_head[42] == weight_value(5, 9, 42) * std::sqrt(3.0f / 64.0f));
    for (std::uint64_t i = 0; i < 1000; ++i) {
        const float v = weight_value(9, 2, i);
        REQUIRE(v >= -1.0f);
        REQUIRE(v < 1.0f);
    }
}

TEST_CASE("make_weights: the same seed gives the same weights, another seed others", "[model]") {
    const auto cfg = *preset("tiny");
    const auto a = make_weights(cfg, 1), b = make_weights(cfg, 1), c = make_weights(cfg, 2);
    CHECK(a.embedding == b.embedding);
    CHECK(a.lm_head == b.lm_head);
    CHECK(a.layers[1].w_gate_up == b.layers[1].w_gate_up);
    // Another seed: essentially every value differs.
    std::size_t same = 0;
    for (std::size_t i = 0; i < a.embedding.size(); ++i)
        same += a.embedding[i] == c.embedding[i];
    CHECK(same < 10);
    CHECK(a.layers[0].wqkv != c.layers[0].wqkv);
    // Tensors of one seed are not copies of each other.
    CHECK(weight_value(1, 1, 0) != weight_value(1, 2, 0));
}

TEST_CASE("weight_value: uniform from -1 up to 1 (fixed seed, mean and variance within 0.01)",
          "[model]") {
    // 100000 draws: the mean's standard error is 0.0018 and the variance's 0.0009.
    double sum = 0, sq = 0;
    constexpr int n = 100000;
    for (int i = 0; i < n; ++i) {
        const double v = weight_value(42, 7, static_cast<std::uint64_t>(i));
        sum += v;
        sq += v * v;
    }
    const double mean = sum / n;
    CHECK(std::abs(mean) < 0.01);
    CHECK(std::abs(sq / n - mean * mean - 1.0 / 3.0) < 0.01);
}
