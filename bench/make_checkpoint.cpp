// lanes-make-checkpoint: writes a random-weight Hugging Face checkpoint (config.json,
// generation_config.json, safetensors with the HF tensor names) of a family and shape, or a seeded
// preset exported exactly, so that benchmarks and tests load real shapes through the same path as
// a downloaded model without carrying gigabytes. Weights come from the presets' counter-based
// generator (replica/backends/model.hpp): the same seed and shape give the same file.
#include "common/config_util.hpp"
#include "common/prompt/model_tokenizer.hpp"
#include "replica/backends/model.hpp"
#include "replica/models/checkpoint.hpp"

#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

namespace {

using namespace lanes;

struct options {
    std::string out;
    std::string preset;         // export this seeded preset as it is
    std::string shape = "tiny"; // a named shape (below) when no preset
    std::string family;         // llama | qwen2 | qwen3 | mistral (default: the shape's)
    std::string dtype = "bf16";
    std::string tokenizer; // copy tokenizer.json, tokenizer_config.json from this directory
    std::size_t shards = 1;
    std::int64_t seed = 0;
    std::int64_t vocab = 0; // 0: the shape's (or the tokenizer's, rounded up to 64)
};

struct shape {
    const char* name;
    const char* family;
    std::size_t hidden, layers, heads, kv_heads, head_dim, ffn, vocab, max_positions;
    float theta, llama3_factor; // factor 0: no scaling
    bool tied;
};

// Real models' shapes (from their config.json) and small ones for tests and CPU benchmarks.
constexpr shape shapes[] = {
    {"tiny", "llama", 64, 2, 4, 2, 16, 128, 512, 4096, 500000.0f, 8.0f, true},
    {"100m", "qwen3", 768, 12, 12, 4, 64, 2048, 32768, 40960, 1e6f, 0.0f, false},
    {"llama-3.2-1b", "llama", 2048, 16, 32, 8, 64, 8192, 128256, 131072, 500000.0f, 32.0f, true},
    {"llama-3.1-8b", "llama", 4096, 32, 32, 8, 128, 14336, 128256, 131072, 500000.0f, 8.0f, false},
    {"qwen3-0.6b", "qwen3", 1024, 28, 16, 8, 128, 3072, 151936, 40960, 1e6f, 0.0f, true},
    {"qwen2.5-0.5b", "qwen2", 896, 24, 14, 2, 64, 4864, 151936, 32768, 1e6f, 0.0f, true},
};

replica::tensor_dtype parse_dtype(const std::string& name) {
    if (name == "bf16")
        return replica::tensor_dtype::bf16;
    if (name == "f16")
        return replica::tensor_dtype::f16;
    if (name == "f32")
        return replica::tensor_dtype::f32;
    throw std::runtime_error("--dtype must be bf16, f16 or f32 (got '" + name + "')");
}

} // namespace

int main(int argc, char** argv) {
    options o;
    common::flag_set f("lanes-make-checkpoint",
                       "Writes a random-weight Hugging Face checkpoint of a family and shape, or "
                       "exports a seeded lanes preset, for lanes-replica --model.");
    f.add("out", o.out, "the directory to write (created)").value_name("DIR");
    f.add("preset", o.preset, "export this seeded preset exactly (fp32 keeps it bit-identical)")
        .value_name("NAME")
        .choices({"tiny", "small", "base", "1b"});
    std::vector<std::string> shape_names;
    for (const auto& s : shapes)
        shape_names.emplace_back(s.name);
    f.add("shape", o.shape, "the model's shape, when no --preset")
        .value_name("NAME")
        .choices(shape_names);
    f.add("family", o.family, "override the shape's family (llama, qwen2, qwen3, mistral)")
        .value_name("NAME");
    f.add("dtype", o.dtype, "stored dtype").value_name("NAME").choices({"bf16", "f16", "f32"});
    f.add("shards", o.shards, "safetensors files (more than 1: with the index)");
    f.add("seed", o.seed, "seed of the weights").value_name("NUMBER");
    f.add("vocab", o.vocab,
          "vocabulary size (0: the shape's, or the tokenizer's rounded up to 64)");
    f.add("tokenizer", o.tokenizer, "copy tokenizer.json and tokenizer_config.json from here")
        .value_name("DIR");
    std::vector<std::string> errors = f.parse(argc, argv);
    if (f.print_if_requested())
        return 0;
    if (o.out.empty())
        errors.push_back("--out is required");
    if (!errors.empty())
        return common::report_config_errors("lanes-make-checkpoint", errors);
    try {
        replica::model_config cfg;
        replica::checkpoint_layout layout;
        layout.dtype = parse_dtype(o.dtype);
        layout.shards = o.shards;
        if (!o.preset.empty()) {
            cfg = *replica::preset(o.preset);
            cfg.max_positions = 8192;
        } else {
            const shape* s = nullptr;
            for (const auto& candidate : shapes)
                if (o.shape == candidate.name)
                    s = &candidate;
            if (s == nullptr)
                throw std::runtime_error("unknown --shape " + o.shape);
            cfg.d_model = s->hidden, cfg.n_layers = s->layers, cfg.n_heads = s->heads;
            cfg.n_kv_heads = s->kv_heads, cfg.head_dim = s->head_dim, cfg.d_ff = s->ffn;
            cfg.vocab = s->vocab, cfg.max_positions = s->max_positions;
            cfg.rope_theta = s->theta, cfg.tie_embeddings = s->tied;
            layout.model_type = o.family.empty() ? s->family : o.family;
            cfg.rms_eps = layout.model_type.starts_with("qwen") ? 1e-6f : 1e-5f;
            if (s->llama3_factor > 0 && layout.model_type == "llama") {
                cfg.rope = replica::model_config::rope_kind::llama3;
                cfg.rope_factor = s->llama3_factor;
                cfg.rope_original_max_positions = 8192.0f;
            }
        }
        if (layout.model_type != "llama" && layout.model_type != "qwen2" &&
            layout.model_type != "qwen3" && layout.model_type != "mistral")
            throw std::runtime_error("--family must be llama, qwen2, qwen3 or mistral");
        cfg.qkv_bias = layout.model_type == "qwen2";
        cfg.qk_norm = layout.model_type == "qwen3";
        std::filesystem::create_directories(o.out);
        if (!o.tokenizer.empty()) {
            for (const char* name : {"tokenizer.json", "tokenizer_config.json"})
                std::filesystem::copy_file(o.tokenizer + "/" + name, o.out + "/" + name,
                                           std::filesystem::copy_options::overwrite_existing);
        }
        if (o.vocab > 0) {
            cfg.vocab = static_cast<std::size_t>(o.vocab);
        } else if (!o.tokenizer.empty()) { // as the real models pad theirs
            const std::size_t ids = common::model_tokenizer::load(o.tokenizer)->vocab_size();
            cfg.vocab = (ids + 63) / 64 * 64;
        }
        cfg.name = o.preset.empty() ? o.shape : o.preset;
        const replica::model_weights w =
            replica::make_weights(cfg, static_cast<std::uint64_t>(o.seed));
        replica::write_checkpoint(w, layout, o.out);
        const std::string gen = o.tokenizer + "/generation_config.json";
        if (!o.tokenizer.empty() && std::filesystem::exists(gen)) // the tokenizer's end ids
            std::filesystem::copy_file(gen, o.out + "/generation_config.json",
                                       std::filesystem::copy_options::overwrite_existing);
        std::printf("%s: %s %s, %zu layers, hidden %zu, vocabulary %zu, %zuM parameters, %s\n",
                    o.out.c_str(), layout.model_type.c_str(), cfg.name.c_str(), cfg.n_layers,
                    cfg.d_model, cfg.vocab, cfg.parameter_count() / 1'000'000, o.dtype.c_str());
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "lanes-make-checkpoint: %s\n", e.what());
        return 1;
    }
}
