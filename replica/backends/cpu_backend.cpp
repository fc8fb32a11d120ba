#include "replica/backends/cpu_backend.hpp"

#include <cblas.h>

#include <algorithm>
#include <cmath>

namespace lanes::replica {

void rms_norm(const float* x, const float* gain, float* out, std::size_t n, float eps) {
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i)
        sum += static_cast<double>(x[i]) * x[i];
    const float inv = 1.0f / std::sqrt(static_cast<float>(sum / static_cast<double>(n)) + eps);
    for (std::size_t i = 0; i < n; ++i)
        out[i] = x[i] * inv * gain[i];
}

void apply_rope(float* v, std::size_t head_dim, std::size_t pos, float theta) {
    model_config c;
    c.head_dim = head_dim;
    c.rope_theta = theta;
    apply_rope(v, head_dim, pos, c.rope_inv_freq().data());
}

void apply_rope(float* v, std::size_t head_dim, std::size_t pos, const float* inv_freq) {
    const std::size_t half = head_dim / 2;
    for (std::size_t i = 0; i < half; ++i) {
        const float angle = static_cast<float>(pos) * inv_freq[i];
        const float c = std::cos(angle), s = std::sin(angle);
        const float a = v[i], b = v[i + half];
        v[i] = a * c - b * s;
        v[i + half] = a * s + b * c;
    }
}

namespace {

// y[rows x out] = x[rows x in] · w[in x out]
void matmul(const float* x, const float* w, float* y, std::size_t rows, std::size_t in,
            std::size_t out) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(rows),
                static_cast<int>(out), static_cast<int>(in), 1.0f, x, static_cast<int>(in), w,
                static_cast<int>(out), 0.0f, y, static_cast<int>(out));
}

} // namespace

cpu_backend::cpu_backend(model_weights weights, std::size_t num_blocks, std::size_t block_size)
    : w_(std::move(weights))
    , inv_freq_(w_.cfg.rope_inv_freq())
    , block_size_(block_size)
    , kv_(num_blocks * w_.cfg.n_layers * 2 * block_size * w_.cfg.kv_dim(), 0.0f) {}

float* cpu_backend::kv_slot(block_id block, std::size_t layer, int which, std::size_t slot) {
    const auto& c = w_.cfg;
    const std::size_t per_block = c.n_layers * 2 * block_size_ * c.kv_dim();
    return kv_.data() + static_cast<std::size_t>(block) * per_block +
           (layer * 2 + static_cast<std::size_t>(which)) * block_size_ * c.kv_dim() +
           slot * c.kv_dim();
}

bool cpu_backend::forward(std::span<const batch_entry> batch,
                          std::vector<std::vector<float>>& logits) {
    const auto& c = w_.cfg;
    std::size_t total = 0;
    for (const auto& e : batch)
        total += e.tokens.size();
    if (total == 0)
        return true;
    const std::size_t d = c.d_model, qkv_dim = c.q_dim() + 2 * c.kv_dim();
    x_.resize(total * d);
    h_.resize(total * d);
    qkv_.resize(total * qkv_dim);
    att_.resize(total * c.q_dim());
    tmp_.resize(total * d);
    gu_.resize(total * 2 * c.d_ff);
    act_.resize(total * c.d_ff);
    pos_.resize(total);
    entry_.resize(total);
    std::size_t t = 0;
    for (std::size_t e = 0; e < batch.size(); ++e) {
        for (std::size_t i = 0; i < batch[e].tokens.size(); ++i, ++t) {
            const auto tok = std::min<common::token_id>(batch[e].tokens[i], c.vocab - 1);
            std::copy_n(w_.embedding.data() + tok * d, d, x_.data() + t * d);
            pos_[t] = batch[e].start_pos + i;
            entry_[t] = e;
        }
    }
    for (std::size_t l = 0; l < c.n_layers; ++l) {
        const auto& lw = w_.layers[l];
        for (t = 0; t < total; ++t)
            rms_norm(x_.data() + t * d, lw.attn_norm.data(), h_.data() + t * d, d, c.rms_eps);
        matmul(h_.data(), lw.wqkv.data(), qkv_.data(), total, d, qkv_dim);
        // Bias (Qwen2), per-head norm (Qwen3) and RoPE on q and k, then k and v to the cache.
        for (t = 0; t < total; ++t) {
            float* q = qkv_.data() + t * qkv_dim;
            float* k = q + c.q_dim();
            float* v = k + c.kv_dim();
            if (!lw.qkv_bias.empty())
                for (std::size_t i = 0; i < qkv_dim; ++i)
                    q[i] += lw.qkv_bias[i];
            for (std::size_t hd = 0; hd < c.n_heads; ++hd) {
                float* head = q + hd * c.head_dim;
                if (!lw.q_norm.empty())
                    rms_norm(head, lw.q_norm.data(), head, c.head_dim, c.rms_eps);
                apply_rope(head, c.head_dim, pos_[t], inv_freq_.data());
            }
            for (std::size_t hd = 0; hd < c.n_kv_heads; ++hd) {
                float* head = k + hd * c.head_dim;
                if (!lw.k_norm.empty())
                    rms_norm(head, lw.k_norm.data(), head, c.head_dim, c.rms_eps);
                apply_rope(head, c.head_dim, pos_[t], inv_freq_.data());
            }
            const auto& e = batch[entry_[t]];
            const block_id b = e.block_table[pos_[t] / block_size_];
            const std::size_t slot = pos_[t] % block_size_;
            std::copy_n(k, c.kv_dim(), kv_slot(b, l, 0, slot));
            std::copy_n(v, c.kv_dim(), kv_slot(b, l, 1, slot));
        }
        attention(batch, l);
        matmul(att_.data(), lw.wo.data(), tmp_.data(), total, c.q_dim(), d);
        for (std::size_t i = 0; i < total * d; ++i)
            x_[i] += tmp_[i];
        for (t = 0; t < total; ++t)
            rms_norm(x_.data() + t * d, lw.mlp_norm.data(), h_.data() + t * d, d, c.rms_eps);
        matmul(h_.data(), lw.w_gate_up.data(), gu_.data(), total, d, 2 * c.d_ff);
        for (t = 0; t < total; ++t) {
            const float* g = gu_.data() + t * 2 * c.d_ff;
            const float* u = g + c.d_ff;
            float* a = act_.data() + t * c.d_ff;
            for (std::size_t i = 0; i < c.d_ff; ++i)
                a[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
        }
        matmul(act_.data(), lw.w_down.data(), tmp_.data(), total, c.d_ff, d);
        for (std::size_t i = 0; i < total * d; ++i)
            x_[i] += tmp_[i];
    }
    // Logits of each entry's last token: final norm, then the LM head.
    t = 0;
    for (const auto& e : batch) {
        t += e.tokens.size();
        if (!e.want_logits)
            continue;
        std::vector<float> out(c.vocab);
        rms_norm(x_.data() + (t - 1) * d, w_.final_norm.data(), h_.data(), d, c.rms_eps);
        cblas_sgemv(CblasRowMajor, CblasTrans, static_cast<int>(d), static_cast<int>(c.vocab), 1.0f,
                    w_.lm_head.data(), static_cast<int>(c.vocab), h_.data(), 1, 0.0f, out.data(),
                    1);
        logits.push_back(std::move(out));
    }
    return true;
}

// Per sequence and KV head: gather the cached K and V rows into contiguous matrices, then
// scores = Q·Kᵀ (sgemm), causal mask, softmax, out = P·V (sgemm).
void cpu_backend::attention(std::span<const batch_entry> batch, std::size_t layer) {
    const auto& c = w_.cfg;
    const std::size_t qkv_dim = c.q_dim() + 2 * c.kv_dim();
    const std::size_t group = c.n_heads / c.n_kv_heads;
    const std::size_t hd = c.head_dim;
    const float scale = 1.0f / std::sqrt(static_cast<float>(hd));
    std::vector<float> keys, values, queries, scores, out;
    std::size_t first_token = 0;
    for (const auto& e : batch) {
        const std::size_t n = e.tokens.size();
        const std::size_t len = e.start_pos + n; // keys visible to the last query
        keys.resize(len * hd);
        values.resize(len * hd);
        queries.resize(n * hd);
        scores.resize(n * len);
        out.resize(n * hd);
        for (std::size_t kvh = 0; kvh < c.n_kv_heads; ++kvh) {
            for (std::size_t j = 0; j < len; ++j) {
                const block_id b = e.block_table[j / block_size_];
                const std::size_t slot = j % block_size_;
                std::copy_n(kv_slot(b, layer, 0, slot) + kvh * hd, hd, keys.data() + j * hd);
                std::copy_n(kv_slot(b, layer, 1, slot) + kvh * hd, hd, values.data() + j * hd);
            }
            for (std::size_t g = 0; g < group; ++g) {
                const std::size_t head = kvh * group + g;
                for (std::size_t i = 0; i < n; ++i)
                    std::copy_n(qkv_.data() + (first_token + i) * qkv_dim + head * hd, hd,
                                queries.data() + i * hd);
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(n),
                            static_cast<int>(len), static_cast<int>(hd), scale, queries.data(),
                            static_cast<int>(hd), keys.data(), static_cast<int>(hd), 0.0f,
                            scores.data(), static_cast<int>(len));
                for (std::size_t i = 0; i < n; ++i) {
                    float* row = scores.data() + i * len;
                    const std::size_t visible = e.start_pos + i + 1; // causal
                    const float max_score = *std::max_element(row, row + visible);
                    float denom = 0.0f;
                    for (std::size_t j = 0; j < visible; ++j) {
                        row[j] = std::exp(row[j] - max_score);
                        denom += row[j];
                    }
                    for (std::size_t j = 0; j < visible; ++j)
                        row[j] /= denom;
                    std::fill(row + visible, row + len, 0.0f);
                }
                cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<int>(n),
                            static_cast<int>(hd), static_cast<int>(len), 1.0f, scores.data(),
                            static_cast<int>(len), values.data(), static_cast<int>(hd), 0.0f,
                            out.data(), static_cast<int>(hd));
                for (std::size_t i = 0; i < n; ++i)
                    std::copy_n(out.data() + i * hd, hd,
                                att_.data() + (first_token + i) * c.q_dim() + head * hd);
            }
        }
        first_token += n;
    }
}

} // namespace lanes::replica
