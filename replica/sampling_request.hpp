// A request's sampling as the engine takes it: the request's fields over the model's defaults
// (generation_defaults, as vLLM's --generation-config auto), else vLLM's neutral values; vLLM's
// temperature floor; stop ids within the vocabulary. Then the checks that need the resolved
// values or the replica (as vLLM's v1 processor and SamplingParams._verify_args word them):
// logprobs within --max-logprobs and from a backend that has logits, min_tokens <= max_tokens.
#pragma once

#include "common/openai/error.hpp"
#include "common/openai/request.hpp"
#include "replica/engine/engine.hpp"
#include "replica/engine/generation_defaults.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace lanes::replica {

// What the replica knows that the request does not say.
struct sampling_inputs {
    std::int64_t max_tokens = 16;   // resolved (check_request)
    std::uint64_t seed = 0;         // the request's, or a fresh one
    std::size_t vocab = 0;          // ids the model has
    bool has_logits = true;         // false: the sim backend
    std::int64_t max_logprobs = 20; // --max-logprobs (-1: no cap)
};

// Fills `out`; the 400 the replica answers instead when a check fails.
std::optional<common::openai::api_error>
resolve_sampling(const common::openai::generation_request& g, const generation_defaults& defaults,
                 const sampling_inputs& in, sampling_params& out);

// The model's sampling defaults: generation_config.json of `model_dir`, else of `tokenizer_dir`
// (none when both are empty), with what was taken and what is not applied logged.
generation_defaults load_generation_defaults(const std::string& model_dir,
                                             const std::string& tokenizer_dir);

} // namespace lanes::replica
