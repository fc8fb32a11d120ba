// The generation requests of the OpenAI API (completions, chat completions), parsed and validated
// as vLLM does: the replica's one reading of a body, and the router's where its fast readers
// decline one.
#pragma once

#include "common/openai/chat_template.hpp"
#include "common/openai/error.hpp"
#include "common/prompt/tokenizer.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace lanes::common::openai {

enum class endpoint { completions, chat_completions };

struct generation_request {
    endpoint kind = endpoint::completions;
    std::optional<std::string> model;
    // completions: the prompt text; chat: the rendered template (render_chat(messages)).
    std::string prompt;
    // completions only: the prompt given as token ids instead of text (empty otherwise).
    std::vector<std::uint32_t> prompt_token_ids;
    std::vector<chat_message> messages;     // chat only
    std::optional<std::int64_t> max_tokens; // max_tokens or max_completion_tokens
    // Sampling, as vLLM's SamplingParams: a field left unset takes the model's default
    // (generation_config.json) where it has one, else vLLM's neutral value.
    std::optional<double> temperature;        // >= 0; 0 is greedy
    std::optional<double> top_p;              // (0, 1]
    std::optional<std::int64_t> top_k;        // 0 or -1: off; else >= 1
    std::optional<double> min_p;              // [0, 1]
    std::optional<double> repetition_penalty; // > 0; prompt and output tokens
    double presence_penalty = 0.0;            // [-2, 2]; output tokens
    double frequency_penalty = 0.0;           // [-2, 2]; output tokens
    std::int64_t min_tokens = 0;              // EOS and stop_token_ids barred before this many
    std::vector<std::int64_t> stop_token_ids; // end the output, and are not in its text
    // Alternatives per token whose log-probabilities to return (completions' logprobs; chat's
    // top_logprobs once logprobs is true); nullopt: no logprobs. -1 asks for the whole
    // vocabulary (the replica holds it to its maximum, as vLLM to --max-logprobs).
    std::optional<std::int64_t> logprobs;
    std::int64_t n = 1;
    bool stream = false;
    bool include_usage = false; // stream_options.include_usage
    std::vector<std::string> stop;
    std::optional<std::int64_t> seed;
    bool ignore_eos = false;
    std::optional<std::string> user;
    // vLLM's cache_salt: prefix-cache blocks are shared only between requests of one salt.
    std::optional<std::string> cache_salt;
    // The first field asking for something lanes replicas do not do (echo, best_of > 1, beam
    // search, prompt_logprobs, logit_bias, allowed_token_ids, bad_words): the replica refuses it by
    // name; a router passes it on (a vLLM replica does them).
    std::optional<std::string> unsupported;
};

// What one body may ask of the parser and the engine; every field is a replica flag.
struct request_limits {
    std::size_t max_depth = 64;         // --json-max-depth: arrays/objects within each other
    std::size_t max_values = 1'000'000; // --json-max-values: DOM nodes one body may build
    std::size_t max_stop_strings = 16;  // --max-stop-strings (0: no cap; OpenAI allows 4)
    std::size_t max_stop_bytes = 512;   // --max-stop-bytes: the longest stop string
    // --max-logprobs: alternatives per token a request may ask log-probabilities of. Held by the
    // replica, not the parser: a router passes on what its replicas decide (vLLM's may differ).
    std::int64_t max_logprobs = 20;
    // Ids a token-id prompt may hold: the replica's vocabulary (set from --tokenizer at start).
    std::size_t vocab_size = common::vocab_size;
};

struct parse_outcome {
    std::optional<generation_request> request;
    std::optional<api_error> error;
};

// Parses and validates a request body. Before any DOM is built the body's nesting and value count
// are held to `limits`, and the fields read with one meaning checked (check_read_fields: a
// duplicate or escaped name is a 400 naming it). Never throws on any input: malformed JSON, a
// non-object body, wrong types, or out-of-range values give a 400 api_error naming the offending
// `param`. Checks: prompt/messages present and well typed; max_tokens >= 1 when given (16.0 counts
// as 16); n == 1 is NOT enforced here (the replica decides); temperature >= 0; top_p in (0, 1];
// the bounds of vLLM's SamplingParams._verify_args on top_k, min_p, the penalties, min_tokens and
// stop_token_ids; logprobs/top_logprobs as vLLM's protocol.py (a count >= 0 or -1; chat's
// top_logprobs only with logprobs true; the replica holds the count to its maximum);
// stop is a string or an array of at most max_stop_strings strings of at most max_stop_bytes
// bytes; stream_options requires stream == true, and its
// include_usage defaults to true once it is given. Bounds are vLLM's, not OpenAI's stricter ones.
parse_outcome parse_generation_request(endpoint kind, std::string_view body,
                                       const request_limits& limits = {});

// The 400 for a body past `limits`' depth or value count, measured without building a DOM;
// nullopt when it is within them. What any DOM of a client's body is built behind.
std::optional<api_error> check_json_shape(std::string_view body, const request_limits& limits);

} // namespace lanes::common::openai
