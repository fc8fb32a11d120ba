#include "replica/models/hf_config.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string_view>

namespace lanes::replica {

namespace {

using nlohmann::json;

struct family {
    std::string_view model_type;
    std::string_view architecture;
};
constexpr std::array<family, 4> families = {{{"llama", "LlamaForCausalLM"},
                                             {"qwen2", "Qwen2ForCausalLM"},
                                             {"qwen3", "Qwen3ForCausalLM"},
                                             {"mistral", "MistralForCausalLM"}}};

// Read by this file (each checked where it is read).
constexpr std::array<std::string_view, 24> used_fields = {
    "architectures",       "model_type",
    "hidden_size",         "intermediate_size",
    "num_hidden_layers",   "num_attention_heads",
    "num_key_value_heads", "head_dim",
    "vocab_size",          "rms_norm_eps",
    "rope_theta",          "rope_scaling",
    "rope_parameters",     "tie_word_embeddings",
    "attention_bias",      "mlp_bias",
    "hidden_act",          "max_position_embeddings",
    "sliding_window",      "use_sliding_window",
    "max_window_layers",   "layer_types",
    "torch_dtype",         "dtype"};

// Present in the configs of these families and without effect on the forward pass.
constexpr std::array<std::string_view, 24> harmless_fields = {
    "_name_or_path",      "transformers_version",
    "use_cache",          "bos_token_id",
    "eos_token_id",       "pad_token_id",
    "initializer_range",  "attention_dropout",
    "pretraining_tp",     "return_dict",
    "output_attentions",  "output_hidden_states",
    "torchscript",        "id2label",
    "label2id",           "problem_type",
    "tokenizer_class",    "is_decoder",
    "is_encoder_decoder", "chunk_size_feed_forward",
    "sep_token_id",       "unk_token_id",
    "model_name",         "_attn_implementation"};

// Fields whose non-trivial value changes the maths in a way lanes does not compute.
struct refused {
    std::string_view field;
    std::string_view why;
};
constexpr std::array<refused, 13> refused_fields = {{
    {"quantization_config", "quantized weights"},
    {"num_experts", "mixture of experts"},
    {"num_local_experts", "mixture of experts"},
    {"n_routed_experts", "mixture of experts"},
    {"moe_intermediate_size", "mixture of experts"},
    {"partial_rotary_factor", "partial rotary embeddings"},
    {"final_logit_softcapping", "logit soft-capping"},
    {"attn_logit_softcapping", "attention soft-capping"},
    {"embedding_multiplier", "scaled embeddings"},
    {"logits_scaling", "scaled logits"},
    {"residual_multiplier", "scaled residuals"},
    {"attention_multiplier", "scaled attention"},
    {"use_qk_norm", "Llama 4 q/k norm"},
}};

[[noreturn]] void fail(const std::string& label, const std::string& field,
                       const std::string& what) {
    throw std::runtime_error(label + ": " + field + " " + what);
}

std::size_t positive(const json& j, const char* key, const std::string& label) {
    if (!j.contains(key))
        fail(label, key, "is missing");
    const auto& v = j.at(key);
    if (!v.is_number_integer() || v.get<std::int64_t>() <= 0 ||
        v.get<std::int64_t>() > (std::int64_t{1} << 31))
        fail(label, key, "must be a positive integer (got " + v.dump() + ")");
    return v.get<std::size_t>();
}

float number(const json& j, const char* key, float fallback, const std::string& label) {
    if (!j.contains(key) || j.at(key).is_null())
        return fallback;
    if (!j.at(key).is_number())
        fail(label, key, "must be a number (got " + j.at(key).dump() + ")");
    return j.at(key).get<float>();
}

bool flag(const json& j, const char* key, bool fallback, const std::string& label) {
    if (!j.contains(key) || j.at(key).is_null())
        return fallback;
    if (!j.at(key).is_boolean())
        fail(label, key, "must be true or false (got " + j.at(key).dump() + ")");
    return j.at(key).get<bool>();
}

// rope_scaling (+ rope_theta), or transformers 5's rope_parameters holding both.
void read_rope(const json& j, model_config& c, const std::string& label) {
    const bool v5 = j.contains("rope_parameters") && j.at("rope_parameters").is_object();
    const json& params = v5 ? j.at("rope_parameters") : j.value("rope_scaling", json());
    const std::string where = v5 ? "rope_parameters" : "rope_scaling";
    c.rope_theta = number(v5 ? params : j, "rope_theta", 10000.0f, label);
    if (params.is_null())
        return;
    if (!params.is_object())
        fail(label, where, "must be an object or null");
    std::string type = params.value("rope_type", params.value("type", std::string("default")));
    if (type == "default")
        return;
    c.rope_factor = number(params, "factor", 1.0f, label);
    if (!(c.rope_factor > 0))
        fail(label, where + ".factor", "must be positive");
    if (type == "linear") {
        c.rope = model_config::rope_kind::linear;
    } else if (type == "llama3") {
        c.rope = model_config::rope_kind::llama3;
        c.rope_low_freq_factor = number(params, "low_freq_factor", 1.0f, label);
        c.rope_high_freq_factor = number(params, "high_freq_factor", 4.0f, label);
        c.rope_original_max_positions =
            number(params, "original_max_position_embeddings", 8192.0f, label);
        if (!(c.rope_high_freq_factor > c.rope_low_freq_factor) || !(c.rope_low_freq_factor > 0))
            fail(label, where, "needs 0 < low_freq_factor < high_freq_factor");
    } else {
        fail(label, where + ".rope_type",
             "'" + type + "' is not computed by lanes (default, linear and llama3 are)");
    }
}

} // namespace

hf_model parse_hf_config(const std::string& text, const std::string& label) {
    json j;
    try {
        j = json::parse(text);
    } catch (const json::exception& e) {
        throw std::runtime_error(label + ": not valid JSON: " + e.what());
    }
    if (!j.is_object())
        throw std::runtime_error(label + ": not a JSON object");
    hf_model m;
    m.model_type = j.value("model_type", std::string());
    const auto fam = std::find_if(families.begin(), families.end(),
                                  [&](const family& f) { return f.model_type == m.model_type; });
    if (fam == families.end())
        fail(label, "model_type",
             "'" + m.model_type + "' is not one lanes computes (llama, qwen2, qwen3, mistral)");
    m.architecture = std::string(fam->architecture);
    if (j.contains("architectures")) {
        const auto& a = j.at("architectures");
        if (!a.is_array() || a.size() != 1 || a[0] != fam->architecture)
            fail(label, "architectures",
                 a.dump() + " is not [\"" + std::string(fam->architecture) + "\"]");
    }
    for (const auto& r : refused_fields)
        if (j.contains(r.field) && !j.at(r.field).is_null() && j.at(r.field) != false &&
            !(r.field == "partial_rotary_factor" && j.at(r.field) == 1.0))
            fail(label, std::string(r.field),
                 "is set: " + std::string(r.why) + " are not computed by lanes");
    if (j.value("hidden_act", std::string("silu")) != "silu")
        fail(label, "hidden_act", j.at("hidden_act").dump() + " is not silu");
    if (flag(j, "mlp_bias", false, label))
        fail(label, "mlp_bias", "is true: MLP biases are not computed by lanes");
    if (m.model_type != "qwen2" && flag(j, "attention_bias", false, label))
        fail(label, "attention_bias", "is true: only Qwen2's q/k/v biases are computed by lanes");

    model_config& c = m.cfg;
    c.name = j.value("_name_or_path", m.model_type);
    c.d_model = positive(j, "hidden_size", label);
    c.d_ff = positive(j, "intermediate_size", label);
    c.n_layers = positive(j, "num_hidden_layers", label);
    c.n_heads = positive(j, "num_attention_heads", label);
    c.n_kv_heads = j.contains("num_key_value_heads") && !j.at("num_key_value_heads").is_null()
                       ? positive(j, "num_key_value_heads", label)
                       : c.n_heads;
    if (c.n_heads % c.n_kv_heads != 0)
        fail(label, "num_key_value_heads", "must divide num_attention_heads");
    c.head_dim = j.contains("head_dim") && !j.at("head_dim").is_null()
                     ? positive(j, "head_dim", label)
                     : c.d_model / c.n_heads;
    if (c.head_dim % 2 != 0 || (!j.contains("head_dim") && c.d_model % c.n_heads != 0))
        fail(label, "head_dim", "must be even (and hidden_size a multiple of the heads)");
    c.vocab = positive(j, "vocab_size", label);
    c.rms_eps = number(j, "rms_norm_eps", 1e-6f, label);
    if (!(c.rms_eps > 0))
        fail(label, "rms_norm_eps", "must be positive");
    read_rope(j, c, label);
    c.qkv_bias = m.model_type == "qwen2";
    c.qk_norm = m.model_type == "qwen3";
    c.tie_embeddings = flag(j, "tie_word_embeddings", false, label); // all four default false
    c.max_positions = positive(j, "max_position_embeddings", label);
    m.torch_dtype = j.value("torch_dtype", j.value("dtype", std::string()));

    // Sliding windows: Mistral's is on whenever set; Qwen's only with use_sliding_window.
    const bool window_on = m.model_type == "mistral" || m.model_type == "llama" ||
                           flag(j, "use_sliding_window", false, label);
    if (window_on && j.contains("sliding_window") && !j.at("sliding_window").is_null())
        m.sliding_window = positive(j, "sliding_window", label);
    if (j.contains("layer_types") && j.at("layer_types").is_array())
        for (const auto& t : j.at("layer_types"))
            if (t != "full_attention" && !(t == "sliding_attention" && !window_on))
                fail(label, "layer_types", "holds " + t.dump() + "; lanes computes full_attention");

    for (const auto& item : j.items()) {
        const std::string& key = item.key();
        auto in = [&key](const auto& list) {
            return std::find(list.begin(), list.end(), key) != list.end();
        };
        const bool refused_key = std::any_of(refused_fields.begin(), refused_fields.end(),
                                             [&](const refused& r) { return r.field == key; });
        if (!in(used_fields) && !in(harmless_fields) && !refused_key)
            m.unrecognized.push_back(key);
    }
    return m;
}

hf_model read_hf_config(const std::string& dir) {
    const std::string path = dir + "/config.json";
    std::ifstream in(path);
    if (!in)
        throw std::runtime_error(path + ": cannot read (is " + dir +
                                 " a Hugging Face model directory?)");
    std::ostringstream text;
    text << in.rdbuf();
    return parse_hf_config(text.str(), path);
}

std::size_t checkpoint_max_model_len(const hf_model& m, std::size_t requested) {
    const std::size_t len = std::min(requested, m.cfg.max_positions);
    if (m.sliding_window && *m.sliding_window < len)
        throw std::runtime_error(
            "config.json: sliding_window " + std::to_string(*m.sliding_window) +
            " is shorter than the context served (" + std::to_string(len) +
            " tokens); lanes computes full attention, so serve it with --max-model-len " +
            std::to_string(*m.sliding_window) + " or less");
    return len;
}

} // namespace lanes::replica
