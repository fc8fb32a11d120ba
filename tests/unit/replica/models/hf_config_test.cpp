// config.json of the four families: shapes and variants read, what lanes does not compute refused
// by name, unknown fields listed rather than dropped.
#include "replica/models/hf_config.hpp"

#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <stdexcept>
#include <string>

using namespace lanes::replica;

namespace {

// Qwen3-0.6B's config.json (its shape and fields).
nlohmann::json qwen3() {
    return nlohmann::json::parse(R"({
      "architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3", "attention_bias": false,
      "attention_dropout": 0.0, "bos_token_id": 151643, "eos_token_id": 151645,
      "head_dim": 128, "hidden_act": "silu", "hidden_size": 1024, "initializer_range": 0.02,
      "intermediate_size": 3072, "max_position_embeddings": 40960, "max_window_layers": 28,
      "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
      "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000,
      "sliding_window": null, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
      "transformers_version": "4.51.0", "use_cache": true, "use_sliding_window": false,
      "vocab_size": 151936})");
}

// Llama-3.2-1B's.
nlohmann::json llama32() {
    return nlohmann::json::parse(R"({
      "architectures": ["LlamaForCausalLM"], "model_type": "llama", "attention_bias": false,
      "bos_token_id": 128000, "eos_token_id": 128001, "head_dim": 64, "hidden_act": "silu",
      "hidden_size": 2048, "intermediate_size": 8192, "max_position_embeddings": 131072,
      "mlp_bias": false, "num_attention_heads": 32, "num_hidden_layers": 16,
      "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
      "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                       "original_max_position_embeddings": 8192, "rope_type": "llama3"},
      "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
      "vocab_size": 128256})");
}

std::string refusal(const nlohmann::json& j) {
    try {
        parse_hf_config(j.dump(), "config.json");
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "";
}

} // namespace

TEST_CASE("hf_config: Qwen3 with explicit head_dim, q/k norm and tied head", "[hf_config]") {
    const hf_model m = parse_hf_config(qwen3().dump(), "config.json");
    CHECK(m.architecture == "Qwen3ForCausalLM");
    CHECK(m.cfg.head_dim == 128); // not hidden / heads = 64
    CHECK(m.cfg.n_heads == 16);
    CHECK(m.cfg.n_kv_heads == 8);
    CHECK(m.cfg.qk_norm);
    CHECK_FALSE(m.cfg.qkv_bias);
    CHECK(m.cfg.tie_embeddings);
    CHECK(m.cfg.vocab == 151936);
    CHECK(m.cfg.max_positions == 40960);
    CHECK(m.cfg.rope == model_config::rope_kind::plain);
    CHECK_FALSE(m.sliding_window); // use_sliding_window false
    CHECK(m.unrecognized.empty());
    CHECK(checkpoint_max_model_len(m, 65536) == 40960);
    CHECK(checkpoint_max_model_len(m, 8192) == 8192);
}

TEST_CASE("hf_config: Llama 3.2 llama3 RoPE scaling, as rope_scaling and rope_parameters",
          "[hf_config]") {
    const hf_model m = parse_hf_config(llama32().dump(), "config.json");
    CHECK(m.cfg.rope == model_config::rope_kind::llama3);
    CHECK(m.cfg.rope_factor == 32.0f);
    CHECK(m.cfg.rope_theta == 500000.0f);
    // Frequencies: the fastest kept, the slowest divided by the factor.
    const auto inv = m.cfg.rope_inv_freq();
    REQUIRE(inv.size() == 32);
    CHECK(inv[0] == 1.0f);
    CHECK(inv[31] == Approx(std::pow(500000.0, -62.0 / 64) / 32).epsilon(1e-5));
    auto v5 = llama32();
    v5["rope_parameters"] = v5["rope_scaling"];
    v5["rope_parameters"]["rope_theta"] = 500000.0;
    v5.erase("rope_scaling");
    v5.erase("rope_theta");
    const hf_model m5 = parse_hf_config(v5.dump(), "config.json");
    CHECK(m5.cfg.rope_inv_freq() == inv);
}

TEST_CASE("hf_config: what lanes does not compute is refused by name", "[hf_config]") {
    auto with = [](nlohmann::json j, const char* key, nlohmann::json value) {
        j[key] = std::move(value);
        return j;
    };
    CHECK_THAT(refusal(with(qwen3(), "quantization_config", {{"quant_method", "awq"}})),
               Catch::Contains("quantization_config is set"));
    CHECK_THAT(refusal(with(qwen3(), "num_experts", 128)), Catch::Contains("num_experts"));
    CHECK_THAT(refusal(with(qwen3(), "hidden_act", "gelu")), Catch::Contains("hidden_act"));
    CHECK_THAT(refusal(with(llama32(), "attention_bias", true)), Catch::Contains("attention_bias"));
    CHECK_THAT(refusal(with(llama32(), "mlp_bias", true)), Catch::Contains("mlp_bias"));
    CHECK_THAT(refusal(with(qwen3(), "rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}})),
               Catch::Contains("rope_scaling.rope_type") && Catch::Contains("yarn"));
    CHECK_THAT(refusal(with(qwen3(), "partial_rotary_factor", 0.5)),
               Catch::Contains("partial_rotary_factor"));
    CHECK(refusal(with(qwen3(), "partial_rotary_factor", 1.0)).empty());
    CHECK_THAT(refusal(with(qwen3(), "model_type", "gemma")), Catch::Contains("model_type"));
    CHECK_THAT(refusal(with(qwen3(), "architectures", {"LlamaForCausalLM"})),
               Catch::Contains("architectures"));
    CHECK_THAT(refusal(with(qwen3(), "num_key_value_heads", 3)),
               Catch::Contains("num_key_value_heads"));
    auto no_hidden = qwen3();
    no_hidden.erase("hidden_size");
    CHECK_THAT(refusal(no_hidden), Catch::Contains("hidden_size is missing"));
}

TEST_CASE("hf_config: sliding windows apply only where the config turns them on", "[hf_config]") {
    auto q = qwen3();
    q["sliding_window"] = 4096; // Qwen2.5/Qwen3 ship it with use_sliding_window false
    CHECK_FALSE(parse_hf_config(q.dump(), "c").sliding_window);
    q["use_sliding_window"] = true;
    const hf_model on = parse_hf_config(q.dump(), "c");
    REQUIRE(on.sliding_window);
    CHECK(checkpoint_max_model_len(on, 4096) == 4096);
    CHECK_THROWS_WITH(checkpoint_max_model_len(on, 8192),
                      Catch::Contains("sliding_window 4096") &&
                          Catch::Contains("--max-model-len 4096"));
    auto mistral = llama32();
    mistral["model_type"] = "mistral";
    mistral["architectures"] = {"MistralForCausalLM"};
    mistral["sliding_window"] = nullptr; // v0.2 and later
    CHECK_FALSE(parse_hf_config(mistral.dump(), "c").sliding_window);
}

TEST_CASE("hf_config: unknown fields are listed, Qwen2 has biases", "[hf_config]") {
    auto q = qwen3();
    q["model_type"] = "qwen2";
    q["architectures"] = {"Qwen2ForCausalLM"};
    q["some_new_knob"] = 3;
    const hf_model m = parse_hf_config(q.dump(), "c");
    CHECK(m.cfg.qkv_bias);
    CHECK_FALSE(m.cfg.qk_norm);
    CHECK(m.unrecognized == std::vector<std::string>{"some_new_knob"});
}
