#include "common/openai/request.hpp"

#include "common/json_depth.hpp"
#include "common/openai/field_check.hpp"
#include "common/prompt/tokenizer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iomanip>
#include <limits>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

namespace lanes::common::openai {

namespace {

using json = nlohmann::json;
using maybe_error = std::optional<api_error>;

// The field `key` of `obj`, or nullptr when it is absent or null (null means "not given").
const json* find_field(const json& obj, const char* key) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
        return nullptr;
    }
    return &*it;
}

api_error must_be(const std::string& name, std::string_view what) {
    return api_error::bad_request("'" + name + "' must be " + std::string(what), name);
}

// Reads an integer that fits in int64; `out` is left alone when the field is absent.
maybe_error read_int(const json& obj, const char* key, std::optional<std::int64_t>& out) {
    const json* v = find_field(obj, key);
    if (v == nullptr) {
        return std::nullopt;
    }
    if (v->is_number_float()) {
        // 16.0 is 16, as pydantic reads an int field (vLLM); 16.5 is not an integer.
        const double d = v->get<double>();
        if (!(d == std::floor(d)) || std::fabs(d) > 9.0e15) {
            return must_be(key, "an integer");
        }
        out = static_cast<std::int64_t>(d);
        return std::nullopt;
    }
    if (!v->is_number_integer()) {
        return must_be(key, "an integer");
    }
    if (v->is_number_unsigned() &&
        v->get<std::uint64_t>() >
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return must_be(key, "a 64-bit signed integer");
    }
    out = v->get<std::int64_t>();
    return std::nullopt;
}

maybe_error read_positive_int(const json& obj, const char* key, std::optional<std::int64_t>& out) {
    std::optional<std::int64_t> value;
    if (auto e = read_int(obj, key, value)) {
        return e;
    }
    if (value && *value < 1) {
        return must_be(key, "at least 1");
    }
    if (value) {
        out = value;
    }
    return std::nullopt;
}

// Reads a field of JSON type `is` as a V; `out` is left alone when the field is absent.
template <typename V, typename Out>
maybe_error read_field(const json& obj, const char* key, bool (json::*is)() const noexcept,
                       std::string_view what, Out& out) {
    const json* v = find_field(obj, key);
    if (v == nullptr) {
        return std::nullopt;
    }
    if (!(v->*is)()) {
        return must_be(key, what);
    }
    out = v->get<V>();
    return std::nullopt;
}

maybe_error read_number(const json& obj, const char* key, double& out) {
    return read_field<double>(obj, key, &json::is_number, "a number", out);
}

maybe_error read_bool(const json& obj, const char* key, bool& out) {
    return read_field<bool>(obj, key, &json::is_boolean, "a boolean", out);
}

maybe_error read_string(const json& obj, const char* key, std::optional<std::string>& out) {
    return read_field<std::string>(obj, key, &json::is_string, "a string", out);
}

// Token ids: every element an integer in [0, vocab).
bool read_token_ids(const json& arr, std::size_t vocab, std::vector<std::uint32_t>& out) {
    out.clear();
    out.reserve(arr.size());
    for (const auto& el : arr) {
        if (!el.is_number_integer() || el.get<std::int64_t>() < 0 ||
            el.get<std::int64_t>() >= static_cast<std::int64_t>(vocab)) {
            return false;
        }
        out.push_back(static_cast<std::uint32_t>(el.get<std::int64_t>()));
    }
    return true;
}

maybe_error parse_prompt(const json& body, std::size_t vocab, generation_request& req) {
    const std::string ids_in = "an array of token ids in [0, " + std::to_string(vocab - 1) + "]";
    const json* p = find_field(body, "prompt");
    const std::string name = "prompt";
    if (p == nullptr) {
        return api_error::bad_request("'prompt' is required", name);
    }
    if (p->is_string()) {
        req.prompt = p->get<std::string>();
        return std::nullopt;
    }
    if (!p->is_array() || p->empty()) {
        return must_be(name, "a string, an array of one string, or an array of token ids");
    }
    const json& first = p->front();
    if (first.is_string() || first.is_array()) {
        if (p->size() > 1) {
            return api_error::bad_request(
                "batched prompts are not supported; send one prompt per request", name);
        }
        if (first.is_string()) {
            req.prompt = first.get<std::string>();
            return std::nullopt;
        }
        if (!first.empty() && read_token_ids(first, vocab, req.prompt_token_ids)) {
            return std::nullopt;
        }
        return must_be(name, ids_in);
    }
    if (!read_token_ids(*p, vocab, req.prompt_token_ids)) {
        return must_be(name, ids_in);
    }
    return std::nullopt;
}

// A message's content: a string, null/absent (empty), or an array of {"type":"text"} parts.
maybe_error parse_content(const json& msg, const std::string& where, std::string& out) {
    const json* c = find_field(msg, "content");
    if (c == nullptr) {
        return std::nullopt;
    }
    if (c->is_string()) {
        out = c->get<std::string>();
        return std::nullopt;
    }
    if (!c->is_array()) {
        return api_error::bad_request("'" + where + ".content' must be a string or an array",
                                      "messages");
    }
    for (const auto& part : *c) {
        const json* type = part.is_object() ? find_field(part, "type") : nullptr;
        const json* text = part.is_object() ? find_field(part, "text") : nullptr;
        if (type == nullptr || !type->is_string() || type->get<std::string>() != "text" ||
            text == nullptr || !text->is_string()) {
            return api_error::bad_request("'" + where +
                                              ".content' parts must be {\"type\": \"text\", "
                                              "\"text\": <string>}",
                                          "messages");
        }
        out += text->get<std::string>();
    }
    return std::nullopt;
}

maybe_error parse_messages(const json& body, generation_request& req) {
    const json* m = find_field(body, "messages");
    if (m == nullptr) {
        return api_error::bad_request("'messages' is required", "messages");
    }
    if (!m->is_array() || m->empty()) {
        return must_be("messages", "a non-empty array");
    }
    req.messages.reserve(m->size());
    for (std::size_t i = 0; i < m->size(); ++i) {
        const json& msg = (*m)[i];
        const std::string where = "messages[" + std::to_string(i) + "]";
        if (!msg.is_object()) {
            return api_error::bad_request("'" + where + "' must be an object", "messages");
        }
        const json* role = find_field(msg, "role");
        if (role == nullptr || !role->is_string()) {
            return api_error::bad_request("'" + where + ".role' must be a string", "messages");
        }
        // Any role, as vLLM takes custom ones: the template writes each by its name.
        chat_message out{role->get<std::string>(), {}};
        if (out.role.empty()) {
            return api_error::bad_request("'" + where + ".role' must not be empty", "messages");
        }
        if (auto e = parse_content(msg, where, out.content)) {
            return e;
        }
        req.messages.push_back(std::move(out));
    }
    req.prompt = render_chat(req.messages);
    return std::nullopt;
}

maybe_error read_optional_number(const json& obj, const char* key, std::optional<double>& out) {
    return read_field<double>(obj, key, &json::is_number, "a number", out);
}

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

maybe_error parse_sampling(const json& body, generation_request& req) {
    if (auto e = read_optional_number(body, "temperature", req.temperature)) {
        return e;
    }
    if (req.temperature && *req.temperature < 0.0) { // no upper bound, as vLLM (OpenAI's is 2)
        return must_be("temperature", "at least 0");
    }
    if (auto e = read_optional_number(body, "top_p", req.top_p)) {
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
    for (auto e :
         {read_int(body, "top_k", req.top_k), read_optional_number(body, "min_p", req.min_p),
          read_optional_number(body, "repetition_penalty", req.repetition_penalty),
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

// The first of `keys` present with a value other than null, {}, [] or "".
const char* first_nonempty(const json& body, std::initializer_list<const char*> keys) {
    for (const char* key : keys) {
        const json* v = find_field(body, key);
        if (v != nullptr && !((v->is_object() || v->is_array() || v->is_string()) && v->empty()))
            return key;
    }
    return nullptr;
}

// Notes the first field that asks for what lanes replicas do not do; never an error here.
void note_unsupported(const json& body, generation_request& req) {
    const auto truthy = [&body](const char* key, double above) {
        const json* v = find_field(body, key);
        if (v == nullptr)
            return false;
        if (v->is_boolean())
            return v->get<bool>();
        return v->is_number() && v->get<double>() > above;
    };
    if (truthy("echo", 0.0))
        req.unsupported = "echo";
    else if (truthy("best_of", 1.0))
        req.unsupported = "best_of";
    else if (truthy("use_beam_search", 0.0))
        req.unsupported = "use_beam_search";
    else if (find_field(body, "prompt_logprobs") != nullptr)
        req.unsupported = "prompt_logprobs";
    else if (const char* key =
                 first_nonempty(body, {"logit_bias", "allowed_token_ids", "bad_words"}))
        req.unsupported = key; // sampling fields of vLLM's that lanes does not apply
}

maybe_error parse_stream(const json& body, generation_request& req) {
    if (auto e = read_bool(body, "stream", req.stream)) {
        return e;
    }
    const json* opts = find_field(body, "stream_options");
    if (opts == nullptr) {
        return std::nullopt;
    }
    if (!opts->is_object()) {
        return must_be("stream_options", "an object");
    }
    if (!req.stream) {
        return api_error::bad_request("'stream_options' requires 'stream' to be true",
                                      "stream_options");
    }
    req.include_usage = true; // the default once stream_options is given, as vLLM
    if (auto e = read_bool(*opts, "include_usage", req.include_usage)) {
        e->param = "stream_options";
        return e;
    }
    return std::nullopt;
}

maybe_error parse_stop(const json& body, generation_request& req, const request_limits& limits) {
    const json* s = find_field(body, "stop");
    if (s == nullptr) {
        return std::nullopt;
    }
    const auto take = [&](const json& el) -> maybe_error {
        const auto& text = el.get_ref<const std::string&>();
        if (text.size() > limits.max_stop_bytes) {
            return must_be("stop", "strings of at most " + std::to_string(limits.max_stop_bytes) +
                                       " bytes (--max-stop-bytes)");
        }
        req.stop.push_back(text);
        return std::nullopt;
    };
    if (s->is_string()) {
        return take(*s);
    }
    if (!s->is_array()) {
        return must_be("stop", "a string or an array of strings");
    }
    // vLLM takes any number; OpenAI 4. Each one is matched against every generated token.
    if (limits.max_stop_strings != 0 && s->size() > limits.max_stop_strings) {
        return must_be("stop", "an array of at most " + std::to_string(limits.max_stop_strings) +
                                   " strings (--max-stop-strings)");
    }
    for (const auto& el : *s) {
        if (!el.is_string()) {
            return must_be("stop", "a string or an array of strings");
        }
        if (auto e = take(el)) {
            return e;
        }
    }
    return std::nullopt;
}

maybe_error parse_max_tokens(const json& body, generation_request& req) {
    if (auto e = read_positive_int(body, "max_tokens", req.max_tokens)) {
        return e;
    }
    if (req.kind == endpoint::chat_completions) {
        return read_positive_int(body, "max_completion_tokens", req.max_tokens);
    }
    return std::nullopt;
}

maybe_error parse_object(const json& body, generation_request& req, const request_limits& limits) {
    auto prompt_error = req.kind == endpoint::completions
                            ? parse_prompt(body, limits.vocab_size, req)
                            : parse_messages(body, req);
    if (prompt_error) {
        return prompt_error;
    }
    for (auto* step : {parse_max_tokens, parse_sampling, parse_stream}) {
        if (auto e = step(body, req)) {
            return e;
        }
    }
    if (auto e = parse_stop(body, req, limits)) {
        return e;
    }
    if (auto e = read_string(body, "model", req.model)) {
        return e;
    }
    note_unsupported(body, req);
    if (auto e = read_string(body, "cache_salt", req.cache_salt)) {
        return e;
    }
    if (req.cache_salt && req.cache_salt->empty()) {
        return api_error::bad_request("cache_salt must not be empty", "cache_salt");
    }
    return read_string(body, "user", req.user);
}

} // namespace

std::optional<api_error> check_json_shape(std::string_view body, const request_limits& limits) {
    // 8 MiB of '[' would otherwise nest 8 million levels deep, and 8 MiB of "[]," build 2.8
    // million containers.
    const json_shape shape = measure_json(body, limits.max_depth, limits.max_values);
    if (shape.within)
        return std::nullopt;
    return api_error::bad_request(
        shape.depth > limits.max_depth
            ? "the body nests deeper than " + std::to_string(limits.max_depth) +
                  " levels (--json-max-depth)"
            : "the body holds more than " + std::to_string(limits.max_values) +
                  " JSON values (--json-max-values)");
}

parse_outcome parse_generation_request(endpoint kind, std::string_view body,
                                       const request_limits& limits) {
    parse_outcome outcome;
    // Bounded before a DOM is built.
    if ((outcome.error = check_json_shape(body, limits)))
        return outcome;
    if ((outcome.error = check_read_fields(kind, body))) {
        return outcome;
    }
    json parsed = json::parse(body.begin(), body.end(), nullptr, false);
    if (parsed.is_discarded()) {
        outcome.error =
            api_error::bad_request("request body is not valid JSON (JSON parse failed)");
        return outcome;
    }
    if (!parsed.is_object()) {
        outcome.error = api_error::bad_request("request body must be a JSON object");
        return outcome;
    }
    generation_request req;
    req.kind = kind;
    try {
        outcome.error = parse_object(parsed, req, limits);
    } catch (const json::exception& e) {
        // Unreachable by design (types are checked before access); kept as a safety net.
        outcome.error = api_error::bad_request(std::string("invalid request: ") + e.what());
    }
    if (!outcome.error) {
        outcome.request = std::move(req);
    }
    return outcome;
}

} // namespace lanes::common::openai
