// What the two readers of a tokenizer.json share (bpe_tokenizer_load.cpp: the pipeline's stages;
// bpe_vocab_load.cpp: the vocabulary). Private to common/prompt.
#pragma once

#include "common/prompt/bpe_tokenizer_impl.hpp"

#include <nlohmann/json.hpp>

#include <string>

namespace lanes::common::bpe_load {

using json = nlohmann::json;

// Refuses the file: "tokenizer.json: <field>: <what>".
[[noreturn]] void fail(const std::string& field, const std::string& what);
// The boolean `key` of `j`, or `fallback` when it is absent or not a boolean.
bool flag(const json& j, const char* key, bool fallback);
// The model's tokens and merges (`model`), the added tokens, and each id's bytes for decoding.
void load_vocabulary(const json& model, const json& added_tokens, bpe_tokenizer::impl& t);

} // namespace lanes::common::bpe_load
