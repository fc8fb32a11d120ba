// The fast path of the router's request parsing: pull out only what routing needs (the prompt or
// the rendered chat, model, stream, user) with an on-demand JSON parser. Anything unusual
// (malformed JSON, unexpected types, unknown content parts) returns nullopt and the caller falls
// back to openai::parse_generation_request, which names the exact problem. The replica validates
// the remaining fields (max_tokens, temperature, ...) and its 400 is relayed unchanged.
#pragma once

#include "common/openai.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::router {

struct request_view {
    std::string prompt;                          // completions prompt, or the rendered chat
    std::vector<std::uint32_t> prompt_token_ids; // completions prompt given as token ids
    std::optional<std::string> model;
    std::optional<std::string> user;
    bool stream = false;
};

std::optional<request_view> extract_request(common::openai::endpoint kind, std::string_view body);

} // namespace lanes::router
