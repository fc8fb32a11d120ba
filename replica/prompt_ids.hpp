// The token ids a request runs, in the engine's vocabulary, as vLLM computes them. In the byte
// vocabulary: the prompt's bytes (a chat rendered by the byte template) behind BOS, and ids as
// given with BOS put in front. With a model's tokenizer: completions encode their prompt with
// add_special_tokens (default true); chats render the model's template (tools,
// chat_template_kwargs, add_generation_prompt default true, continue_final_message) and encode
// with add_special_tokens default false; ids are taken as given, each checked against the
// vocabulary (request_limits::vocab_size). The same reading serves POST /tokenize.
#pragma once

#include "common/openai/error.hpp"
#include "common/openai/request.hpp"
#include "common/prompt/tokenizer.hpp"
#include "replica/engine/vocabulary.hpp"

#include <ctime>
#include <optional>
#include <string_view>
#include <vector>

namespace lanes::replica {

struct prompt_ids_result {
    std::vector<common::token_id> ids;
    std::optional<common::openai::api_error> error;
};

// `g` is the parsed request, `body` its JSON text (read again for the template's fields).
prompt_ids_result prompt_ids(const common::openai::generation_request& g, std::string_view body,
                             const vocabulary& vocab, std::time_t now);

// The vocabulary's own spelling of each id (Hugging Face's convert_ids_to_tokens: byte-level
// symbols, added tokens as written), for /tokenize's return_token_strs.
std::vector<std::string> token_strings(const vocabulary& vocab,
                                       std::span<const common::token_id> ids);

} // namespace lanes::replica
