// Model weights from and to a Hugging Face checkpoint directory. Loading maps the safetensors
// files, checks every tensor's name and shape against config.json, and converts the HF layout
// ([out][in] per nn.Linear, separate q/k/v and gate/up) into the backends' fp32 [in][out] layout
// with q|k|v and gate|up packed; a tied model's LM head is its embedding. Writing does the
// reverse, so a seeded preset becomes an ordinary checkpoint that loads back bit-identical.
#pragma once

#include "replica/backends/model.hpp"
#include "replica/models/hf_config.hpp"
#include "replica/models/safetensors.hpp"

#include <cstddef>
#include <string>

namespace lanes::replica {

struct loaded_checkpoint {
    hf_model model;
    model_weights weights;
    std::size_t files = 0;                   // safetensors files read
    tensor_dtype stored = tensor_dtype::f32; // the dtype most bytes were stored in
    std::size_t bytes = 0;                   // tensor bytes read
};

// Reads DIR's config.json and weights. Throws std::runtime_error naming the file, the tensor or
// the config field at fault.
loaded_checkpoint load_checkpoint(const std::string& dir);

struct checkpoint_layout {
    std::string model_type = "llama";        // llama | qwen2 | qwen3 | mistral
    tensor_dtype dtype = tensor_dtype::bf16; // f32, bf16 or f16
    std::size_t shards = 1;                  // >1: model-0000k-of-0000n + the index
    std::size_t bos_token_id = 0;
    std::size_t eos_token_id = 0;
};

// Writes DIR/config.json, DIR/generation_config.json and the weights of `w` (cfg's shape and
// variants: qkv_bias, qk_norm, tie_embeddings, RoPE scaling). DIR must exist.
void write_checkpoint(const model_weights& w, const checkpoint_layout& layout,
                      const std::string& dir);

} // namespace lanes::replica
