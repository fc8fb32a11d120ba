// The fields of a generation request that are read with one meaning. vLLM, like most JSON
// parsers, takes the last of two equal keys, while a reader that streams (the router's) may act
// on the first: a body that names one of these fields twice, or spells its name with escapes
// ("mod\u0065l"), could route on one value and run on another. Both servers refuse it, with a
// 400 naming the field. The router's readers apply the same rule in their own pass over a body;
// a differential test holds the two to one answer.
#pragma once

#include "common/openai/error.hpp"
#include "common/openai/request.hpp"

#include <optional>
#include <string_view>

namespace lanes::common::openai {

// The top-level fields read (model, prompt or messages, stream, user; tools for chat) and, in
// each chat message, role and content. Bodies that are not JSON objects pass: the parser that
// follows reports them. Never throws.
std::optional<api_error> check_read_fields(endpoint kind, std::string_view body);

} // namespace lanes::common::openai
