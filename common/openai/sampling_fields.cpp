#include "common/openai/sampling_fields.hpp"

#include "common/openai/json_fields.hpp"

#include <algorithm>
#include <cmath>
#include <iomanip>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

namespace lanes::common::openai {

namespace {

using json = nlohmann::json;
using namespace fields;

// A number as Python's repr writes a float (vLLM's messages quote the value so).
std::string py_float(double d) {
    if (std::isnan(d))
        return "nan";
    if (std::isinf(d))
        return d < 0 ? "-inf" : "inf";
    std::ostringstream out;
    out << std::setprecision(17) << d;
    std::string s = out.str();
    // Shortest form that reads back as d.
    for (int p = 1; p <= 17; ++p) {
        std::ostringstream t;
        t << std::setprecision(p) << d;
        if (std::stod(t.str()) == d) {
            s = t.str();
            break;
        }
    }
    if (s.find_first_of(".e") == std::string::npos)
        s += ".0";
    return s;
}

api_error vllm_error(std::string message, const char* param) {
    return api_error::bad_request(std::move(message), param);
}

// Bounds and messages of vLLM's SamplingParams._verify_args (vllm/sampling_params.py).
maybe_error check_sampling_bounds(const generation_request& req) {
    if (req.top_k && *req.top_k < -1)
        return vllm_error("top_k must be 0 (disable), or at least 1, got " +
                              std::to_string(*req.top_k) + ".",
                          "top_k");
    if (req.min_p && !(*req.min_p >= 0.0 && *req.min_p <= 1.0))
        return vllm_error("min_p must be in [0, 1], got " + py_float(*req.min_p) + ".", "min_p");
    if (req.repetition_penalty && !(*req.repetition_penalty > 0.0))
        return vllm_error("repetition_penalty must be greater than zero, got " +
                              py_float(*req.repetition_penalty) + ".",
                          "repetition_penalty");
    if (!(req.presence_penalty >= -2.0 && req.presence_penalty <= 2.0))
        return vllm_error("presence_penalty must be in [-2, 2], got " +
                              py_float(req.presence_penalty) + ".",
                          "presence_penalty");
    if (!(req.frequency_penalty >= -2.0 && req.frequency_penalty <= 2.0))
        return vllm_error("frequency_penalty must be in [-2, 2], got " +
                              py_float(req.frequency_penalty) + ".",
                          "frequency_penalty");
    if (req.min_tokens < 0)
        return vllm_error("min_tokens must be greater than or equal to 0, got " +
                              std::to_string(req.min_tokens) + ".",
                          "min_tokens");
    return std::nullopt;
}

maybe_error parse_stop_token_ids(const json& body, generation_request& req) {
    const json* ids = find_field(body, "stop_token_ids");
    if (ids == nullptr)
        return std::nullopt;
    if (!ids->is_array())
        return must_be("stop_token_ids", "an array of integers");
    for (const auto& el : *ids) {
        json one = json::object();
        one["id"] = el;
        std::optional<std::int64_t> id;
        if (el.is_null() || read_int(one, "id", id))
            return vllm_error("stop_token_ids must contain only integers", "stop_token_ids");
        // Duplicates dropped, order kept (vLLM: list(dict.fromkeys(stop_token_ids))).
        if (std::find(req.stop_token_ids.begin(), req.stop_token_ids.end(), *id) ==
            req.stop_token_ids.end())
            req.stop_token_ids.push_back(*id);
    }
    return std::nullopt;
}

// completions: logprobs is a count; chat: logprobs a flag and top_logprobs the count. Checks of
// vLLM's protocol.py (check_logprobs); the maximum (--max-logprobs) is the replica's to apply.
maybe_error parse_logprobs(const json& body, generation_request& req) {
    const bool chat = req.kind == endpoint::chat_completions;
    const json* flag = find_field(body, "logprobs");
    if (!chat) {
        if (flag != nullptr && flag->is_boolean()) { // pydantic reads a JSON bool as an int
            req.logprobs = flag->get<bool>() ? 1 : 0;
        } else if (auto e = read_int(body, "logprobs", req.logprobs)) {
            return e;
        }
        if (req.logprobs && *req.logprobs < -1)
            return vllm_error("`logprobs` must be a positive value or -1.", "logprobs");
        return std::nullopt;
    }
    bool wanted = false;
    if (flag != nullptr) {
        if (flag->is_number_integer() &&
            (flag->get<std::int64_t>() == 0 || flag->get<std::int64_t>() == 1)) {
            wanted = flag->get<std::int64_t>() == 1;
        } else if (auto e = read_bool(body, "logprobs", wanted)) {
            return e;
        }
    }
    std::optional<std::int64_t> top;
    if (auto e = read_int(body, "top_logprobs", top))
        return e;
    if (top && *top < -1)
        return vllm_error("`top_logprobs` must be a positive value or -1.", "top_logprobs");
    if (top && *top != 0 && !wanted)
        return vllm_error("when using `top_logprobs`, `logprobs` must be set to true.",
                          "top_logprobs");
    if (wanted)
        req.logprobs = top.value_or(0);
    return std::nullopt;
}

} // namespace

std::optional<api_error> parse_sampling_fields(const json& body, generation_request& req) {
    if (auto e = read_number(body, "temperature", req.temperature)) {
        return e;
    }
    if (req.temperature && *req.temperature < 0.0) { // no upper bound, as vLLM (OpenAI's is 2)
        return must_be("temperature", "at least 0");
    }
    if (auto e = read_number(body, "top_p", req.top_p)) {
        return e;
    }
    if (req.top_p && (*req.top_p <= 0.0 || *req.top_p > 1.0)) {
        return must_be("top_p", "greater than 0 and at most 1");
    }
    std::optional<std::int64_t> n;
    if (auto e = read_positive_int(body, "n", n)) {
        return e;
    }
    req.n = n.value_or(1);
    if (auto e = read_int(body, "seed", req.seed)) {
        return e;
    }
    std::optional<std::int64_t> min_tokens;
    for (auto e : {read_int(body, "top_k", req.top_k), read_number(body, "min_p", req.min_p),
                   read_number(body, "repetition_penalty", req.repetition_penalty),
                   read_number(body, "presence_penalty", req.presence_penalty),
                   read_number(body, "frequency_penalty", req.frequency_penalty),
                   read_int(body, "min_tokens", min_tokens), parse_stop_token_ids(body, req),
                   parse_logprobs(body, req)}) {
        if (e)
            return e;
    }
    req.min_tokens = min_tokens.value_or(0);
    if (auto e = check_sampling_bounds(req)) {
        return e;
    }
    return read_bool(body, "ignore_eos", req.ignore_eos);
}

} // namespace lanes::common::openai
