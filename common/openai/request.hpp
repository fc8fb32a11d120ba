// OpenAI-compatible wire types: request parsing with validation, and the JSON of responses,
// stream chunks and errors (shaped as vLLM >= 0.10.1 writes them).
#pragma once

#include "common/openai/chat_template.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace lanes::common::openai {

// A client-facing error: becomes {"error":{"message","type","param","code"}} with `status`.
struct api_error {
    int status = 400;
    std::string message;
    std::string type; // BadRequestError, NotFoundError, ...; empty: error_type(status)
    std::optional<std::string> param;

    static api_error bad_request(std::string message, std::optional<std::string> param = {});
    static api_error not_found(std::string message);
};

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
    double temperature = 1.0;
    double top_p = 1.0;
    std::int64_t n = 1;
    bool stream = false;
    bool include_usage = false; // stream_options.include_usage
    std::vector<std::string> stop;
    std::optional<std::int64_t> seed;
    bool ignore_eos = false;
    std::optional<std::string> user;
    // The first field asking for something lanes replicas do not do (logprobs, top_logprobs,
    // echo, best_of > 1, beam search): the replica refuses it by name; a router passes it on
    // (a vLLM replica does them).
    std::optional<std::string> unsupported;
};

struct parse_outcome {
    std::optional<generation_request> request;
    std::optional<api_error> error;
};

// Parses and validates a request body. Never throws on any input: malformed JSON, a non-object
// body, wrong types, or out-of-range values give a 400 api_error naming the offending `param`.
// Checks: prompt/messages present and well typed; max_tokens >= 1 when given (16.0 counts as
// 16); n == 1 is NOT enforced here (the replica decides); temperature >= 0; top_p in (0, 1];
// stop is a string or an array of strings; stream_options requires stream == true, and its
// include_usage defaults to true once it is given. Bounds are vLLM's, not OpenAI's stricter ones.
parse_outcome parse_generation_request(endpoint kind, std::string_view body);

// The status-named type of an error ("BadRequestError", "NotFoundError", ...), as vLLM names
// them.
std::string error_type(int status);

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

std::string error_json(const api_error& e);

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

// SSE framing: "data: <payload>\n\n", and the terminator "data: [DONE]\n\n".
std::string sse_event(std::string_view payload);
inline constexpr std::string_view sse_done = "data: [DONE]\n\n";

} // namespace lanes::common::openai
