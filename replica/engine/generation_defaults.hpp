// The model's sampling defaults, from its generation_config.json, as vLLM applies them with its
// default --generation-config auto (ModelConfig.get_diff_sampling_param): a request that leaves
// one of temperature, top_p, top_k, min_p, repetition_penalty unset gets the model's value, and
// max_new_tokens caps max_tokens. vLLM reads the file through transformers' to_diff_dict, which
// leaves out values equal to transformers' defaults: top_k 50 (and temperature, top_p,
// repetition_penalty 1.0, neutral anyway) is not taken. Fields that change sampling in
// transformers but that neither vLLM nor lanes applies (typical_p, no_repeat_ngram_size,
// num_beams > 1, ...) are named, so the start-up log can say so.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::replica {

struct generation_defaults {
    std::optional<double> temperature;
    std::optional<double> top_p;
    std::optional<std::int64_t> top_k;
    std::optional<double> min_p;
    std::optional<double> repetition_penalty;
    std::optional<std::int64_t> max_tokens; // max_new_tokens
    // Fields of the file that change sampling and are not applied (or whose value is out of
    // range and so dropped), for the start-up log.
    std::vector<std::string> not_applied;

    bool empty() const {
        return !temperature && !top_p && !top_k && !min_p && !repetition_penalty && !max_tokens;
    }
    // "temperature=0.6 top_p=0.95", for the start-up log.
    std::string describe() const;
};

// The defaults in a generation_config.json's text. Never throws: text that is not a JSON object
// gives no defaults and an `error`.
generation_defaults parse_generation_defaults(std::string_view json_text, std::string& error);

// `dir`/generation_config.json read and parsed; a missing file gives no defaults and no error.
generation_defaults read_generation_defaults(const std::filesystem::path& dir, std::string& error);

} // namespace lanes::replica
