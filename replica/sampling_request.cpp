#include "replica/sampling_request.hpp"

#include "common/log.hpp"

#include <algorithm>

namespace lanes::replica {

namespace openai = common::openai;

namespace {

// vLLM raises a temperature in (0, 0.01) to 0.01 (_MAX_TEMP in sampling_params.py): below it
// the softmax overflows.
constexpr double min_random_temperature = 0.01;

std::optional<openai::api_error> check_sampling(const openai::generation_request& g,
                                                const sampling_params& s,
                                                const sampling_inputs& in) {
    const bool chat = g.kind == openai::endpoint::chat_completions;
    if (g.logprobs) {
        const std::int64_t asked =
            *g.logprobs == -1 ? static_cast<std::int64_t>(in.vocab) : *g.logprobs;
        if (in.max_logprobs >= 0 && asked > in.max_logprobs) // -1: no cap
            return openai::api_error::bad_request(
                "Requested sample logprobs of " + std::to_string(asked) +
                    ", which is greater than max allowed: " + std::to_string(in.max_logprobs),
                chat ? "top_logprobs" : "logprobs");
        if (!in.has_logits)
            return openai::api_error::bad_request(
                "'logprobs' needs the model's logits, and the sim backend computes none",
                "logprobs");
    }
    if (s.min_tokens > s.max_tokens)
        return openai::api_error::bad_request("min_tokens must be less than or equal to "
                                              "max_tokens=" +
                                                  std::to_string(s.max_tokens) + ", got " +
                                                  std::to_string(s.min_tokens) + ".",
                                              "min_tokens");
    return std::nullopt;
}

} // namespace

std::optional<openai::api_error> resolve_sampling(const openai::generation_request& g,
                                                  const generation_defaults& d,
                                                  const sampling_inputs& in, sampling_params& s) {
    s.max_tokens = in.max_tokens;
    s.temperature = g.temperature.value_or(d.temperature.value_or(1.0));
    if (s.temperature > 0.0 && s.temperature < min_random_temperature)
        s.temperature = min_random_temperature;
    s.top_p = g.top_p.value_or(d.top_p.value_or(1.0));
    s.top_k = std::max<std::int64_t>(0, g.top_k.value_or(d.top_k.value_or(0))); // -1 is 0
    s.min_p = g.min_p.value_or(d.min_p.value_or(0.0));
    s.repetition_penalty = g.repetition_penalty.value_or(d.repetition_penalty.value_or(1.0));
    s.presence_penalty = g.presence_penalty;
    s.frequency_penalty = g.frequency_penalty;
    s.min_tokens = g.min_tokens;
    s.seed = in.seed;
    s.stop = g.stop;
    s.stop_token_ids.clear();
    for (const std::int64_t id : g.stop_token_ids) // an id outside the vocabulary never comes
        if (id >= 0 && static_cast<std::uint64_t>(id) < in.vocab)
            s.stop_token_ids.push_back(static_cast<common::token_id>(id));
    s.ignore_eos = g.ignore_eos;
    s.logprobs.reset();
    if (g.logprobs) // -1: the whole vocabulary
        s.logprobs = *g.logprobs == -1 ? in.vocab : static_cast<std::size_t>(*g.logprobs);
    return check_sampling(g, s, in);
}

generation_defaults load_generation_defaults(const std::string& model_dir,
                                             const std::string& tokenizer_dir) {
    const std::string& dir = !model_dir.empty() ? model_dir : tokenizer_dir;
    if (dir.empty())
        return {};
    std::string error;
    generation_defaults d = read_generation_defaults(dir, error);
    if (!error.empty())
        LANES_LOG(warn, "sampling", error << "; no sampling defaults taken from it");
    if (!d.empty())
        LANES_LOG(info, "sampling",
                  "default sampling parameters overridden by the model's generation config: "
                      << d.describe());
    if (!d.not_applied.empty()) {
        std::string names;
        for (const auto& n : d.not_applied)
            names += (names.empty() ? "" : ", ") + n;
        LANES_LOG(warn, "sampling", "generation_config.json fields not applied: " << names);
    }
    return d;
}

} // namespace lanes::replica
