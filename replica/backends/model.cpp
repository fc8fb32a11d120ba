#include "replica/backends/model.hpp"

#include <algorithm>
#include <cmath>
#include <thread>

namespace lanes::replica {

namespace {

std::uint64_t splitmix64(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

// Each value depends only on its index, so a large tensor is filled by several threads (the 1b
// preset's 970 M values take seconds on one core) with the same result.
std::vector<float> uniform(std::uint64_t seed, std::uint64_t tensor, std::size_t n, float scale) {
    std::vector<float> v(n);
    auto fill = [&v, seed, tensor, scale](std::size_t lo, std::size_t hi) {
        for (std::size_t i = lo; i < hi; ++i)
            v[i] = weight_value(seed, tensor, i) * scale;
    };
    constexpr std::size_t min_per_thread = std::size_t{1} << 22;
    const std::size_t threads = std::clamp<std::size_t>(
        n / min_per_thread, 1, std::max(1U, std::thread::hardware_concurrency()));
    if (threads == 1) {
        fill(0, n);
        return v;
    }
    const std::size_t chunk = (n + threads - 1) / threads;
    std::vector<std::jthread> pool;
    for (std::size_t lo = 0; lo < n; lo += chunk)
        pool.emplace_back(fill, lo, std::min(n, lo + chunk));
    pool.clear(); // joins
    return v;
}

} // namespace

float weight_value(std::uint64_t seed, std::uint64_t tensor, std::uint64_t index) {
    const std::uint64_t r = splitmix64(splitmix64(seed ^ (tensor << 40)) + index);
    // 24 high bits -> [0, 1) exactly representable, then to [-1, 1).
    return static_cast<float>(r >> 40) * (1.0f / 16777216.0f) * 2.0f - 1.0f;
}

std::vector<float> model_config::rope_inv_freq() const {
    const std::size_t half = head_dim / 2;
    std::vector<float> inv(half);
    constexpr double two_pi = 6.283185307179586;
    for (std::size_t i = 0; i < half; ++i) {
        const float plain =
            std::pow(rope_theta, -2.0f * static_cast<float>(i) / static_cast<float>(head_dim));
        float f = plain;
        if (rope == rope_kind::linear) {
            f = plain / rope_factor;
        } else if (rope == rope_kind::llama3) {
            const double low_wavelen = rope_original_max_positions / rope_low_freq_factor;
            const double high_wavelen = rope_original_max_positions / rope_high_freq_factor;
            const double wavelen = two_pi / plain;
            if (wavelen > low_wavelen) {
                f = plain / rope_factor;
            } else if (wavelen >= high_wavelen) { // between the two: a smooth blend
                const double smooth =
                    (rope_original_max_positions / wavelen - rope_low_freq_factor) /
                    (rope_high_freq_factor - rope_low_freq_factor);
                f = static_cast<float>((1.0 - smooth) * plain / rope_factor + smooth * plain);
            }
        }
        inv[i] = f;
    }
    return inv;
}

std::size_t model_config::parameter_count() const {
    const std::size_t per_layer = 2 * d_model + d_model * (q_dim() + 2 * kv_dim()) +
                                  q_dim() * d_model + d_model * 2 * d_ff + d_ff * d_model;
    const std::size_t extras =
        (qkv_bias ? q_dim() + 2 * kv_dim() : 0) + (qk_norm ? 2 * head_dim : 0);
    return (tie_embeddings ? 1 : 2) * vocab * d_model + n_layers * (per_layer + extras) + d_model;
}

std::optional<model_config> preset(std::string_view name) {
    model_config c;
    c.name = std::string(name);
    if (name == "tiny") {
        c.d_model = 64, c.n_layers = 2, c.n_heads = 4, c.n_kv_heads = 2, c.head_dim = 16;
        c.d_ff = 128;
    } else if (name == "small") {
        c.d_model = 512, c.n_layers = 8, c.n_heads = 8, c.n_kv_heads = 4, c.head_dim = 64;
        c.d_ff = 1408;
    } else if (name == "base") {
        c.d_model = 768, c.n_layers = 14, c.n_heads = 12, c.n_kv_heads = 4, c.head_dim = 64;
        c.d_ff = 3072;
    } else if (name == "1b") {
        c.d_model = 2048, c.n_layers = 22, c.n_heads = 32, c.n_kv_heads = 4, c.head_dim = 64;
        c.d_ff = 5632;
    } else {
        return std::nullopt;
    }
    return c;
}

model_weights make_weights(const model_config& cfg, std::uint64_t seed) {
    model_weights w;
    w.cfg = cfg;
    std::uint64_t tensor = 0;
    auto fan_in_scale = [](std::size_t fan_in) {
        return std::sqrt(3.0f / static_cast<float>(fan_in));
    };
    w.embedding = uniform(seed, tensor++, cfg.vocab * cfg.d_model, 1.0f);
    const std::size_t qkv = cfg.q_dim() + 2 * cfg.kv_dim();
    for (std::size_t l = 0; l < cfg.n_layers; ++l) {
        layer_weights lw;
        lw.attn_norm.assign(cfg.d_model, 1.0f);
        lw.mlp_norm.assign(cfg.d_model, 1.0f);
        lw.wqkv = uniform(seed, tensor++, cfg.d_model * qkv, fan_in_scale(cfg.d_model));
        lw.wo = uniform(seed, tensor++, cfg.q_dim() * cfg.d_model, fan_in_scale(cfg.q_dim()));
        lw.w_gate_up =
            uniform(seed, tensor++, cfg.d_model * 2 * cfg.d_ff, fan_in_scale(cfg.d_model));
        lw.w_down = uniform(seed, tensor++, cfg.d_ff * cfg.d_model, fan_in_scale(cfg.d_ff));
        w.layers.push_back(std::move(lw));
    }
    w.final_norm.assign(cfg.d_model, 1.0f);
    w.lm_head = uniform(seed, tensor++, cfg.d_model * cfg.vocab, fan_in_scale(cfg.d_model));
    // The families' extra tensors, from ids past the preset's (which they leave unchanged):
    // biases in ±0.1, q/k norm gains in 1 ± 0.2.
    tensor = 1000;
    for (auto& lw : w.layers) {
        if (cfg.qkv_bias)
            lw.qkv_bias = uniform(seed, tensor++, cfg.q_dim() + 2 * cfg.kv_dim(), 0.1f);
        if (cfg.qk_norm) {
            lw.q_norm = uniform(seed, tensor++, cfg.head_dim, 0.2f);
            lw.k_norm = uniform(seed, tensor++, cfg.head_dim, 0.2f);
            for (auto* gains : {&lw.q_norm, &lw.k_norm})
                for (float& g : *gains)
                    g += 1.0f;
        }
    }
    if (cfg.tie_embeddings)
        tie_lm_head(w);
    return w;
}

void tie_lm_head(model_weights& w) {
    const std::size_t vocab = w.cfg.vocab, d = w.cfg.d_model;
    w.lm_head.resize(d * vocab);
    for (std::size_t v = 0; v < vocab; ++v)
        for (std::size_t i = 0; i < d; ++i)
            w.lm_head[i * vocab + v] = w.embedding[v * d + i];
}

} // namespace lanes::replica
