// Token sampling as vLLM's V1 sampler orders it (vllm/v1/sample/sampler.py): penalties on the
// raw logits (repetition over prompt and output tokens, presence and frequency over output
// tokens), then temperature (0 is greedy: the argmax after penalties), then min-p, top-k and
// top-p (nucleus) truncation. Which ids may be drawn is the vocabulary's (for the byte
// vocabulary: printable ASCII, newline and, unless barred, EOS); ids the request bars (its
// stop_token_ids before min_tokens) are out too. The random draw depends only on (seed,
// position), so the same request gives the same text.
#pragma once

#include "common/prompt/tokenizer.hpp"

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace lanes::replica {

struct sample_options {
    double temperature = 1.0;
    double top_p = 1.0;
    std::uint64_t seed = 0;
    bool allow_eos = true;
    std::int64_t top_k = 0; // 0 or -1: off
    double min_p = 0.0;     // 0: off
    double repetition_penalty = 1.0;
    double presence_penalty = 0.0;
    double frequency_penalty = 0.0;
};

// What sampling one position needs beyond the logits: the tokens the penalties look at, and the
// ids barred from the draw.
struct sample_context {
    std::span<const common::token_id> prompt;
    std::span<const common::token_id> output;
    std::span<const common::token_id> barred;
};

class vocabulary;

// `vocab` decides which ids may be drawn (vocabulary::sampleable); null: the byte vocabulary.
common::token_id sample(std::span<const float> logits, const sample_options& options,
                        std::uint64_t position, const vocabulary* vocab = nullptr,
                        const sample_context& context = {});

// The penalties applied to a copy of `logits` as vLLM's apply_penalties does: a logit of a token
// in the prompt or the output is divided by repetition_penalty when positive, multiplied when
// not; then frequency_penalty * count and presence_penalty (once) are subtracted for each output
// token.
void apply_penalties(std::vector<float>& logits, const sample_options& options,
                     const sample_context& context);

// Log-probabilities under the log-softmax of the raw logits (vLLM's default logprobs_mode,
// raw_logprobs): the chosen token's, and the `top` most likely ids (ties to the lower id).
struct token_logprobs {
    double chosen = 0.0;
    std::vector<std::pair<common::token_id, double>> top;
};
token_logprobs raw_logprobs(std::span<const float> logits, common::token_id chosen,
                            std::size_t top);

// Whether a token may appear in an output (printable, newline, or EOS when allowed).
bool sampleable(common::token_id id, bool allow_eos);

// A token chosen without a model (sim backend): printable, deterministic in (seed, position).
common::token_id synthetic_token(std::uint64_t seed, std::uint64_t position);

} // namespace lanes::replica
