// Token sampling restricted to printable text: only printable ASCII, newline and (unless
// ignore_eos) EOS may be drawn, so every response is valid UTF-8. temperature 0 is greedy;
// otherwise softmax at the temperature, then nucleus (top-p) truncation. The random draw depends
// only on (seed, position), so the same request gives the same text.
#pragma once

#include "common/prompt/tokenizer.hpp"

#include <cstdint>
#include <span>

namespace lanes::replica {

struct sample_options {
    double temperature = 1.0;
    double top_p = 1.0;
    std::uint64_t seed = 0;
    bool allow_eos = true;
};

class vocabulary;

// `vocab` decides which ids may be drawn (vocabulary::sampleable); null: the byte vocabulary.
common::token_id sample(std::span<const float> logits, const sample_options& options,
                        std::uint64_t position, const vocabulary* vocab = nullptr);

// Whether a token may appear in an output (printable, newline, or EOS when allowed).
bool sampleable(common::token_id id, bool allow_eos);

// A token chosen without a model (sim backend): printable, deterministic in (seed, position).
common::token_id synthetic_token(std::uint64_t seed, std::uint64_t position);

} // namespace lanes::replica
