// The answers of the OpenAI API as vLLM >= 0.10.1 shapes them: whole completions, the chunks of a
// stream, and response ids.
#pragma once

#include "common/openai/request.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

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

// New id: prefix + 32 lowercase hex characters from a thread-local random generator.
std::string make_id(std::string_view prefix);

// Non-streaming bodies.
// `stop_reason`: the stop string that ended the output (vLLM's extension), else null.
std::string completion_json(endpoint kind, const response_meta& meta, std::string_view text,
                            std::string_view finish_reason, const usage& u,
                            const std::optional<std::string>& stop_reason = {});

// Streaming pieces; each function returns the JSON of one chunk (no SSE framing).
// Chat's first chunk carries the role with empty content.
std::string chat_role_chunk(const response_meta& meta);
// A text delta; `finish_reason` empty means null; `stop_reason` as for completion_json.
std::string delta_chunk(endpoint kind, const response_meta& meta, std::string_view text,
                        std::string_view finish_reason = {},
                        const std::optional<std::string>& stop_reason = {});
std::string usage_chunk(endpoint kind, const response_meta& meta, const usage& u);

} // namespace lanes::common::openai
