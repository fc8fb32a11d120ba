// Checkpoints written and read back: a seeded preset exported in fp32 loads bit-identical and
// computes bit-identical logits; the family variants (biases, q/k norm, tied head, shards) and
// bf16 storage survive the trip; a tensor the config does not describe is refused.
#include "replica/models/checkpoint.hpp"

#include "replica/backends/cpu_backend.hpp"

#include <catch2/catch.hpp>

#include <filesystem>
#include <stdexcept>
#include <string>

#include <unistd.h>

using namespace lanes;
using namespace lanes::replica;

namespace {

struct temp_dir {
    std::filesystem::path path;
    explicit temp_dir(const std::string& name)
        : path(std::filesystem::temp_directory_path() /
               ("lanes_ckpt_" + name + "_" + std::to_string(::getpid()))) {
        std::filesystem::remove_all(path);
        std::filesystem::create_directories(path);
    }
    ~temp_dir() { std::filesystem::remove_all(path); }
};

std::vector<float> logits_of(const model_weights& w, std::span<const common::token_id> tokens) {
    cpu_backend b(w, 4, 16);
    const std::vector<block_id> table{0, 1, 2, 3};
    const batch_entry e{tokens, 0, table, true};
    std::vector<std::vector<float>> out;
    b.forward(std::span(&e, 1), out);
    return out.at(0);
}

bool same_layers(const model_weights& a, const model_weights& b) {
    if (a.layers.size() != b.layers.size())
        return false;
    for (std::size_t l = 0; l < a.layers.size(); ++l) {
        const auto &x = a.layers[l], &y = b.layers[l];
        if (x.attn_norm != y.attn_norm || x.wqkv != y.wqkv || x.wo != y.wo ||
            x.mlp_norm != y.mlp_norm || x.w_gate_up != y.w_gate_up || x.w_down != y.w_down ||
            x.qkv_bias != y.qkv_bias || x.q_norm != y.q_norm || x.k_norm != y.k_norm)
            return false;
    }
    return true;
}

// The tiny preset's shape as a Qwen3 (q/k norm, tied) or Qwen2 (biases) model.
model_weights variant(bool qwen3) {
    model_config c = *preset("tiny");
    c.qk_norm = qwen3;
    c.qkv_bias = !qwen3;
    c.tie_embeddings = true;
    c.max_positions = 4096;
    return make_weights(c, 11); // with the variant's tensors, the head tied
}

const std::vector<common::token_id> prompt = {
    common::bos_token, 'h', 'e', 'l', 'l', 'o', ' ', 'w', 'o', 'r', 'l', 'd'};

} // namespace

TEST_CASE("checkpoint: a preset exported in fp32 loads and computes bit-identically",
          "[checkpoint]") {
    temp_dir dir("preset");
    model_config c = *preset("tiny");
    c.max_positions = 8192;
    const model_weights w = make_weights(c, 7);
    write_checkpoint(w, {"llama", tensor_dtype::f32, 1, 256, 257}, dir.path.string());
    const loaded_checkpoint back = load_checkpoint(dir.path.string());
    CHECK(back.model.architecture == "LlamaForCausalLM");
    CHECK(back.files == 1);
    CHECK(back.weights.embedding == w.embedding);
    CHECK(back.weights.lm_head == w.lm_head);
    CHECK(back.weights.final_norm == w.final_norm);
    CHECK(same_layers(back.weights, w));
    CHECK(logits_of(back.weights, prompt) == logits_of(w, prompt)); // exactly
}

TEST_CASE("checkpoint: Qwen3 and Qwen2 variants, tied and sharded, survive the trip",
          "[checkpoint]") {
    for (const bool qwen3 : {true, false}) {
        temp_dir dir(qwen3 ? "qwen3" : "qwen2");
        const model_weights w = variant(qwen3);
        write_checkpoint(w, {qwen3 ? "qwen3" : "qwen2", tensor_dtype::f32, 3, 256, 257},
                         dir.path.string());
        CHECK(std::filesystem::exists(dir.path / "model.safetensors.index.json"));
        CHECK(std::filesystem::exists(dir.path / "model-00003-of-00003.safetensors"));
        const loaded_checkpoint back = load_checkpoint(dir.path.string());
        CHECK(back.files == 3);
        CHECK(back.model.cfg.tie_embeddings);
        CHECK(back.model.cfg.qk_norm == qwen3);
        CHECK(back.model.cfg.qkv_bias == !qwen3);
        CHECK(same_layers(back.weights, w));
        CHECK(back.weights.lm_head == w.lm_head); // rebuilt from the embedding
        CHECK(logits_of(back.weights, prompt) == logits_of(w, prompt));
        // The variant changes the numbers (it is computed, not ignored).
        model_weights plain = w;
        for (auto& lw : plain.layers)
            lw.qkv_bias.clear(), lw.q_norm.clear(), lw.k_norm.clear();
        CHECK(logits_of(plain, prompt) != logits_of(w, prompt));
    }
}

TEST_CASE("checkpoint: bf16 storage rounds each weight once", "[checkpoint]") {
    temp_dir dir("bf16");
    model_config c = *preset("tiny");
    c.max_positions = 8192;
    const model_weights w = make_weights(c, 5);
    write_checkpoint(w, {"mistral", tensor_dtype::bf16, 1, 256, 257}, dir.path.string());
    const loaded_checkpoint back = load_checkpoint(dir.path.string());
    CHECK(back.stored == tensor_dtype::bf16);
    CHECK(back.model.architecture == "MistralForCausalLM");
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < w.embedding.size(); ++i)
        wrong += back.weights.embedding[i] != bf16_to_f32(f32_to_bf16(w.embedding[i]));
    for (std::size_t i = 0; i < w.layers[0].wqkv.size(); ++i)
        wrong += back.weights.layers[0].wqkv[i] != bf16_to_f32(f32_to_bf16(w.layers[0].wqkv[i]));
    CHECK(wrong == 0);
}

TEST_CASE("checkpoint: a tensor config.json does not describe is refused", "[checkpoint]") {
    temp_dir dir("extra");
    model_weights w = variant(false); // biases, written under a llama config that has none
    write_checkpoint(w, {"llama", tensor_dtype::f32, 1, 256, 257}, dir.path.string());
    // write_checkpoint writes biases only for the flags of w.cfg, so they are in the file.
    CHECK_THROWS_WITH(load_checkpoint(dir.path.string()),
                      Catch::Contains("self_attn.") && Catch::Contains("_proj.bias") &&
                          Catch::Contains("not part of the model"));
}
