// A Hugging Face model's config.json read into the replica's model_config, for the families lanes
// computes: LlamaForCausalLM (Llama 3.x with llama3 RoPE scaling, tied or not), Qwen2ForCausalLM
// (q/k/v biases), Qwen3ForCausalLM (q/k RMSNorm, explicit head_dim) and MistralForCausalLM. A
// field that would change the maths and that lanes does not compute (quantization, MoE, yarn or
// dynamic RoPE, partial rotary, soft-capping, an active sliding window, other activations) is
// refused by name; fields known to be harmless are accepted; any other field is listed in
// `unrecognized` for the start-up log, never silently dropped.
#pragma once

#include "replica/backends/model.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace lanes::replica {

struct hf_model {
    model_config cfg;
    std::string architecture; // e.g. Qwen3ForCausalLM
    std::string model_type;   // llama | qwen2 | qwen3 | mistral
    std::string torch_dtype;  // as config.json says (may be empty)
    // The window of sliding-window attention when the config turns it on; lanes computes full
    // attention, which is the same maths only while sequences fit in the window.
    std::optional<std::size_t> sliding_window;
    std::vector<std::string> unrecognized; // fields neither used, refused nor known harmless
};

// Reads DIR/config.json; throws std::runtime_error naming the file and the field.
hf_model read_hf_config(const std::string& dir);
// The same from the text of a config.json (`label` names it in errors).
hf_model parse_hf_config(const std::string& text, const std::string& label);

// The longest context the replica may serve: --max-model-len capped by max_position_embeddings.
// Throws naming sliding_window when the model's window is shorter than that (lanes would compute
// attention the model never saw); the message says which --max-model-len would serve it.
std::size_t checkpoint_max_model_len(const hf_model& m, std::size_t requested);

} // namespace lanes::replica
