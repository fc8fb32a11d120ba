#include "replica/models/checkpoint.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <set>
#include <stdexcept>

namespace lanes::replica {

namespace {

// dst[i][offset + r] = src[r][i] for src [rows][cols] and dst [cols][dst_cols]: an nn.Linear
// weight ([out][in]) placed as columns of the backends' [in][out] matrix. Blocked, so neither
// side is walked with a large stride for long.
void place_transposed(const std::vector<float>& src, std::size_t rows, std::size_t cols,
                      std::vector<float>& dst, std::size_t dst_cols, std::size_t offset) {
    constexpr std::size_t tile = 64;
    for (std::size_t r0 = 0; r0 < rows; r0 += tile)
        for (std::size_t i0 = 0; i0 < cols; i0 += tile)
            for (std::size_t r = r0; r < std::min(rows, r0 + tile); ++r)
                for (std::size_t i = i0; i < std::min(cols, i0 + tile); ++i)
                    dst[i * dst_cols + offset + r] = src[r * cols + i];
}

// The inverse: rows [offset, offset + rows) of an [out][in] weight from columns of src
// [cols][src_cols].
std::vector<float> take_transposed(const std::vector<float>& src, std::size_t src_cols,
                                   std::size_t offset, std::size_t rows, std::size_t cols) {
    std::vector<float> out(rows * cols);
    constexpr std::size_t tile = 64;
    for (std::size_t r0 = 0; r0 < rows; r0 += tile)
        for (std::size_t i0 = 0; i0 < cols; i0 += tile)
            for (std::size_t r = r0; r < std::min(rows, r0 + tile); ++r)
                for (std::size_t i = i0; i < std::min(cols, i0 + tile); ++i)
                    out[r * cols + i] = src[i * src_cols + offset + r];
    return out;
}

std::string layer_name(std::size_t l, const char* rest) {
    return "model.layers." + std::to_string(l) + "." + rest;
}

} // namespace

loaded_checkpoint load_checkpoint(const std::string& dir) {
    loaded_checkpoint out;
    out.model = read_hf_config(dir);
    const model_config& c = out.model.cfg;
    const checkpoint_files files(dir);
    out.files = files.file_count();
    out.stored = files.main_dtype();
    std::set<std::string, std::less<>> read_names;
    auto read = [&](const std::string& name, std::vector<std::size_t> shape) {
        const tensor_view& t = files.require(name, std::move(shape));
        out.bytes += t.bytes.size();
        read_names.insert(name);
        return t.to_f32();
    };
    model_weights& w = out.weights;
    w.cfg = c;
    const std::size_t d = c.d_model, q = c.q_dim(), kv = c.kv_dim(), qkv = q + 2 * kv;
    w.embedding = read("model.embed_tokens.weight", {c.vocab, d});
    for (std::size_t l = 0; l < c.n_layers; ++l) {
        layer_weights lw;
        lw.attn_norm = read(layer_name(l, "input_layernorm.weight"), {d});
        lw.mlp_norm = read(layer_name(l, "post_attention_layernorm.weight"), {d});
        lw.wqkv.resize(d * qkv);
        place_transposed(read(layer_name(l, "self_attn.q_proj.weight"), {q, d}), q, d, lw.wqkv, qkv,
                         0);
        place_transposed(read(layer_name(l, "self_attn.k_proj.weight"), {kv, d}), kv, d, lw.wqkv,
                         qkv, q);
        place_transposed(read(layer_name(l, "self_attn.v_proj.weight"), {kv, d}), kv, d, lw.wqkv,
                         qkv, q + kv);
        if (c.qkv_bias) {
            for (const auto& [name, n] :
                 {std::pair{"self_attn.q_proj.bias", q}, std::pair{"self_attn.k_proj.bias", kv},
                  std::pair{"self_attn.v_proj.bias", kv}}) {
                const auto b = read(layer_name(l, name), {n});
                lw.qkv_bias.insert(lw.qkv_bias.end(), b.begin(), b.end());
            }
        }
        if (c.qk_norm) {
            lw.q_norm = read(layer_name(l, "self_attn.q_norm.weight"), {c.head_dim});
            lw.k_norm = read(layer_name(l, "self_attn.k_norm.weight"), {c.head_dim});
        }
        lw.wo.resize(q * d);
        place_transposed(read(layer_name(l, "self_attn.o_proj.weight"), {d, q}), d, q, lw.wo, d, 0);
        lw.w_gate_up.resize(d * 2 * c.d_ff);
        place_transposed(read(layer_name(l, "mlp.gate_proj.weight"), {c.d_ff, d}), c.d_ff, d,
                         lw.w_gate_up, 2 * c.d_ff, 0);
        place_transposed(read(layer_name(l, "mlp.up_proj.weight"), {c.d_ff, d}), c.d_ff, d,
                         lw.w_gate_up, 2 * c.d_ff, c.d_ff);
        lw.w_down.resize(c.d_ff * d);
        place_transposed(read(layer_name(l, "mlp.down_proj.weight"), {d, c.d_ff}), d, c.d_ff,
                         lw.w_down, d, 0);
        w.layers.push_back(std::move(lw));
    }
    w.final_norm = read("model.norm.weight", {d});
    w.lm_head.resize(d * c.vocab);
    if (c.tie_embeddings) { // some tied checkpoints save a copy as lm_head.weight: unused
        tie_lm_head(w);
    } else {
        place_transposed(read("lm_head.weight", {c.vocab, d}), c.vocab, d, w.lm_head, c.vocab, 0);
    }
    // A tensor nothing read is a part of the model lanes would not compute (a bias, a norm).
    for (const auto& name : files.names())
        if (!read_names.contains(name) && !(c.tie_embeddings && name == "lm_head.weight"))
            throw std::runtime_error(dir + ": tensor " + name +
                                     " is not part of the model config.json describes (lanes "
                                     "would ignore it)");
    return out;
}

void write_checkpoint(const model_weights& w, const checkpoint_layout& layout,
                      const std::string& dir) {
    const model_config& c = w.cfg;
    const std::size_t d = c.d_model, q = c.q_dim(), kv = c.kv_dim(), qkv = q + 2 * kv;
    std::vector<tensor_to_write> tensors;
    auto add = [&](std::string name, std::vector<std::size_t> shape,
                   std::function<std::vector<float>()> values) {
        tensors.push_back({std::move(name), layout.dtype, std::move(shape), std::move(values)});
    };
    add("model.embed_tokens.weight", {c.vocab, d}, [&] { return w.embedding; });
    for (std::size_t l = 0; l < c.n_layers; ++l) {
        const layer_weights& lw = w.layers[l];
        add(layer_name(l, "input_layernorm.weight"), {d}, [&lw] { return lw.attn_norm; });
        add(layer_name(l, "self_attn.q_proj.weight"), {q, d},
            [&lw, qkv, q, d] { return take_transposed(lw.wqkv, qkv, 0, q, d); });
        add(layer_name(l, "self_attn.k_proj.weight"), {kv, d},
            [&lw, qkv, q, kv, d] { return take_transposed(lw.wqkv, qkv, q, kv, d); });
        add(layer_name(l, "self_attn.v_proj.weight"), {kv, d},
            [&lw, qkv, q, kv, d] { return take_transposed(lw.wqkv, qkv, q + kv, kv, d); });
        if (c.qkv_bias) {
            auto part = [&lw](std::size_t from, std::size_t n) {
                return [&lw, from, n] {
                    return std::vector<float>(lw.qkv_bias.begin() + static_cast<long>(from),
                                              lw.qkv_bias.begin() + static_cast<long>(from + n));
                };
            };
            add(layer_name(l, "self_attn.q_proj.bias"), {q}, part(0, q));
            add(layer_name(l, "self_attn.k_proj.bias"), {kv}, part(q, kv));
            add(layer_name(l, "self_attn.v_proj.bias"), {kv}, part(q + kv, kv));
        }
        if (c.qk_norm) {
            add(layer_name(l, "self_attn.q_norm.weight"), {c.head_dim},
                [&lw] { return lw.q_norm; });
            add(layer_name(l, "self_attn.k_norm.weight"), {c.head_dim},
                [&lw] { return lw.k_norm; });
        }
        add(layer_name(l, "self_attn.o_proj.weight"), {d, q},
            [&lw, d, q] { return take_transposed(lw.wo, d, 0, d, q); });
        add(layer_name(l, "post_attention_layernorm.weight"), {d}, [&lw] { return lw.mlp_norm; });
        add(layer_name(l, "mlp.gate_proj.weight"), {c.d_ff, d},
            [&lw, &c, d] { return take_transposed(lw.w_gate_up, 2 * c.d_ff, 0, c.d_ff, d); });
        add(layer_name(l, "mlp.up_proj.weight"), {c.d_ff, d},
            [&lw, &c, d] { return take_transposed(lw.w_gate_up, 2 * c.d_ff, c.d_ff, c.d_ff, d); });
        add(layer_name(l, "mlp.down_proj.weight"), {d, c.d_ff},
            [&lw, &c, d] { return take_transposed(lw.w_down, d, 0, d, c.d_ff); });
    }
    add("model.norm.weight", {d}, [&w] { return w.final_norm; });
    if (!c.tie_embeddings)
        add("lm_head.weight", {c.vocab, d},
            [&w, &c, d] { return take_transposed(w.lm_head, c.vocab, 0, c.vocab, d); });

    // Shards: consecutive runs of tensors of about equal bytes, as save_pretrained writes them.
    const std::size_t shards = std::max<std::size_t>(1, std::min(layout.shards, tensors.size()));
    nlohmann::json weight_map = nlohmann::json::object();
    std::size_t total = 0;
    for (const auto& t : tensors) {
        std::size_t n = dtype_bytes(t.dtype);
        for (const auto s : t.shape)
            n *= s;
        total += n;
    }
    std::size_t next = 0;
    for (std::size_t s = 0; s < shards; ++s) {
        const std::size_t end = s + 1 == shards
                                    ? tensors.size()
                                    : std::max(next + 1, tensors.size() * (s + 1) / shards);
        std::vector<tensor_to_write> part(tensors.begin() + static_cast<long>(next),
                                          tensors.begin() + static_cast<long>(end));
        char file[64];
        if (shards == 1)
            std::snprintf(file, sizeof file, "model.safetensors");
        else
            std::snprintf(file, sizeof file, "model-%05zu-of-%05zu.safetensors", s + 1, shards);
        write_safetensors(dir + "/" + file, part);
        for (const auto& t : part)
            weight_map[t.name] = file;
        next = end;
    }
    if (shards > 1) {
        std::ofstream index(dir + "/model.safetensors.index.json");
        index << nlohmann::json{{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}}
                     .dump(2)
              << "\n";
    }

    const char* arch = layout.model_type == "qwen2"     ? "Qwen2ForCausalLM"
                       : layout.model_type == "qwen3"   ? "Qwen3ForCausalLM"
                       : layout.model_type == "mistral" ? "MistralForCausalLM"
                                                        : "LlamaForCausalLM";
    const char* dtype_name = layout.dtype == tensor_dtype::bf16  ? "bfloat16"
                             : layout.dtype == tensor_dtype::f16 ? "float16"
                                                                 : "float32";
    nlohmann::json config = {
        {"architectures", {arch}},
        {"model_type", layout.model_type},
        {"hidden_size", d},
        {"intermediate_size", c.d_ff},
        {"num_hidden_layers", c.n_layers},
        {"num_attention_heads", c.n_heads},
        {"num_key_value_heads", c.n_kv_heads},
        {"head_dim", c.head_dim},
        {"vocab_size", c.vocab},
        {"rms_norm_eps", c.rms_eps},
        {"rope_theta", c.rope_theta},
        {"tie_word_embeddings", c.tie_embeddings},
        {"max_position_embeddings", c.max_positions > 0 ? c.max_positions : 131072},
        {"hidden_act", "silu"},
        {"torch_dtype", dtype_name},
        {"bos_token_id", layout.bos_token_id},
        {"eos_token_id", layout.eos_token_id},
    };
    if (c.rope == model_config::rope_kind::llama3)
        config["rope_scaling"] = {
            {"rope_type", "llama3"},
            {"factor", c.rope_factor},
            {"low_freq_factor", c.rope_low_freq_factor},
            {"high_freq_factor", c.rope_high_freq_factor},
            {"original_max_position_embeddings", c.rope_original_max_positions}};
    else if (c.rope == model_config::rope_kind::linear)
        config["rope_scaling"] = {{"rope_type", "linear"}, {"factor", c.rope_factor}};
    else
        config["rope_scaling"] = nullptr;
    if (layout.model_type == "qwen2" || layout.model_type == "qwen3")
        config["use_sliding_window"] = false;
    if (layout.model_type == "qwen3")
        config["attention_bias"] = false;
    std::ofstream(dir + "/config.json") << config.dump(2) << "\n";
    std::ofstream(dir + "/generation_config.json")
        << nlohmann::json{{"bos_token_id", layout.bos_token_id},
                          {"eos_token_id", layout.eos_token_id}}
               .dump(2)
        << "\n";
}

} // namespace lanes::replica
