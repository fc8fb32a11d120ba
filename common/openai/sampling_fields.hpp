// The sampling fields of a generation request, read with vLLM's meaning and held to vLLM's
// bounds, each a 400 naming the field with vLLM's message (SamplingParams._verify_args in
// vllm/sampling_params.py; check_logprobs in the OpenAI protocol.py): temperature, top_p, n,
// seed, top_k, min_p, repetition_penalty, presence_penalty, frequency_penalty, min_tokens,
// stop_token_ids, logprobs (completions: a count; chat: a flag, with top_logprobs the count),
// ignore_eos.
#pragma once

#include "common/openai/error.hpp"
#include "common/openai/request.hpp"

#include <optional>

#include <nlohmann/json_fwd.hpp>

namespace lanes::common::openai {

std::optional<api_error> parse_sampling_fields(const nlohmann::json& body, generation_request& req);

} // namespace lanes::common::openai
