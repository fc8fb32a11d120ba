// The fast path of the router's request parsing: pull out only what routing needs (the prompt or
// the rendered chat, model, stream, user), first with a one-pass scanner for plain completions
// bodies (scan.hpp), then with simdjson's on-demand parser for what the scanner declines. Anything
// unusual (malformed JSON, unexpected types, unknown content parts) returns nullopt and the caller
// falls back to openai::parse_generation_request, which names the exact problem. The replica
// validates the remaining fields (max_tokens, temperature, ...) and its 400 is relayed unchanged.
#pragma once

#include "common/openai/request.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::router {

struct request_view {
    // The completions prompt, or the rendered chat. A prompt string without escapes is not
    // copied: it is viewed where it lies in the body passed to extract_request, which must then
    // outlive this view.
    std::string_view prompt() const { return borrowed ? *borrowed : std::string_view(owned); }

    std::string owned;                           // the prompt, when it could not be borrowed
    std::optional<std::string_view> borrowed;    // the prompt, in the request body
    std::vector<std::uint32_t> prompt_token_ids; // completions prompt given as token ids
    std::optional<std::string> model;
    std::optional<std::string> user;
    bool stream = false;
};

std::optional<request_view> extract_request(common::openai::endpoint kind, std::string_view body);

// The second tier alone (for tests): simdjson's on-demand parser.
std::optional<request_view> extract_request_on_demand(common::openai::endpoint kind,
                                                      std::string_view body);

} // namespace lanes::router
