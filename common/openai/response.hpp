// The answers of the OpenAI API as vLLM >= 0.10.1 shapes them: whole completions, the chunks of a
// stream, and response ids.
#pragma once

#include "common/openai/request.hpp"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lanes::common::openai {

struct usage {
    std::int64_t prompt_tokens = 0;
    std::int64_t completion_tokens = 0;
    std::optional<std::int64_t> cached_tokens; // usage.prompt_tokens_details.cached_tokens
};

// `id` e.g. "cmpl-<32 hex>"; `created` unix seconds.
struct response_meta {
    std::string id;
    std::int64_t created = 0;
    std::string model;
};

// What ended an output, vLLM's stop_reason: the stop string, or the stop_token_ids id; null when
// neither did (EOS, length).
struct stop_reason {
    stop_reason() = default;
    stop_reason(std::optional<std::string> s) // NOLINT(google-explicit-constructor): as before
        : text(std::move(s)) {}
    std::optional<std::string> text;
    std::optional<std::int64_t> token;
};

// One output token's log-probabilities. `token`: the token's text as vLLM decodes one id alone:
// bytes that are not whole UTF-8 become U+FFFD (vLLM returns "\ufffd" for a partial byte-level
// token, standardcompletions/rfcs#2). `alternatives`: as vLLM's per-position dict holds them,
// the chosen token first, then the likeliest others by rank (at most asked + 1).
struct logprob_entry {
    std::string token;
    double logprob = 0.0;
};
struct token_logprob {
    logprob_entry chosen;
    std::vector<logprob_entry> alternatives;
};

// A choice's "logprobs" value for `tokens`, as vLLM's serving_completion/serving_chat build it
// (log-probabilities floored at -9999.0). Completions: {"text_offset", "token_logprobs",
// "tokens", "top_logprobs": [{token: logprob}]}, offsets in code points counted on from
// `text_offset`, which is advanced past these tokens. Chat: {"content": [{"token", "logprob",
// "bytes", "top_logprobs": [the first `num_top` alternatives]}]}.
std::string logprobs_json(endpoint kind, std::span<const token_logprob> tokens, std::size_t num_top,
                          std::size_t& text_offset);

// New id: prefix + 32 lowercase hex characters from a thread-local random generator.
std::string make_id(std::string_view prefix);

// Non-streaming bodies.
// `stop_reason`: what ended the output (vLLM's extension), else null. `logprobs`: the choice's
// logprobs JSON (logprobs_json), empty for null.
std::string completion_json(endpoint kind, const response_meta& meta, std::string_view text,
                            std::string_view finish_reason, const usage& u,
                            const stop_reason& stop = {}, std::string_view logprobs = {});

// Streaming pieces; each function returns the JSON of one chunk (no SSE framing).
// Chat's first chunk carries the role with empty content.
std::string chat_role_chunk(const response_meta& meta);
// A text delta; `finish_reason` empty means null; `stop`, `logprobs` as for completion_json.
std::string delta_chunk(endpoint kind, const response_meta& meta, std::string_view text,
                        std::string_view finish_reason = {}, const stop_reason& stop = {},
                        std::string_view logprobs = {});
std::string usage_chunk(endpoint kind, const response_meta& meta, const usage& u);

} // namespace lanes::common::openai
