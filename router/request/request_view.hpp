// What the router reads of a request body: only what it routes on. The prompt (or the rendered
// chat, or a responses request's instructions and input) as text, or the prompt's token ids; the
// model; the session's `user`; whether it streams; a hash of what else the engine puts in front
// of the prompt (tool definitions); a responses request's previous response. Everything else is
// forwarded untouched and judged by the engine: a wrongly typed field the router reads counts as
// absent, it is not refused. The router refuses (400) only a body that is not JSON, nests deeper
// than its limit, or reads two ways in a field it reads (the field given twice, or its name
// spelled with escapes), so that router and engine cannot act on two meanings of one body.
//
// Two readers: a one-pass scanner for the common completions body (scan.hpp), then simdjson's
// on-demand parser for everything (this file), which is the reference.
#pragma once

#include "common/openai/error.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::router {

// Which body a path carries: what the router reads of it.
enum class body_kind {
    completions, // prompt
    chat,        // messages, tools
    responses,   // instructions, input, tools, previous_response_id
    other,       // model only (embeddings, rerank, score, tokenize, ...)
};

struct request_view {
    // The text routed on. A prompt string without escapes is not copied: it is viewed where it
    // lies in the body given to the reader, which must then outlive this view.
    std::string_view prompt() const { return borrowed ? *borrowed : std::string_view(owned); }

    std::string owned;                           // the text, when it could not be borrowed
    std::optional<std::string_view> borrowed;    // the text, in the request body
    std::vector<std::uint32_t> prompt_token_ids; // a completions prompt given as token ids
    std::optional<std::string> model;
    std::optional<std::string> user;
    bool stream = false;
    // Hash of what the engine renders before the prompt besides the messages (tools); 0: none.
    std::uint64_t context_hash = 0;
    std::optional<std::string> previous_response_id;
};

// The per-thread buffers of the on-demand reader keep at most this much between bodies.
inline constexpr std::size_t kept_read_buffer_bytes = 1 << 20;

struct read_limits {
    std::size_t max_depth = 64; // nesting of arrays and objects
};

struct read_result {
    std::optional<request_view> view;
    std::optional<common::openai::api_error> error; // the 400 when the body cannot be read
};

// The router's reading of `body`: the fast scanner when it takes the body, else the on-demand
// reader.
read_result read_request(body_kind kind, std::string_view body, const read_limits& limits = {});

// The on-demand reader alone (for tests: the scanner must agree with it).
read_result read_request_on_demand(body_kind kind, std::string_view body,
                                   const read_limits& limits = {});

} // namespace lanes::router
