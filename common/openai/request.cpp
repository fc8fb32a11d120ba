#include "common/openai/request.hpp"

#include "common/json_depth.hpp"
#include "common/openai/field_check.hpp"
#include "common/openai/json_fields.hpp"
#include "common/openai/sampling_fields.hpp"
#include "common/prompt/tokenizer.hpp"

#include <cstdint>
#include <utility>

#include <nlohmann/json.hpp>

namespace lanes::common::openai {

namespace {

using json = nlohmann::json;
using namespace fields;

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
    for (auto* step : {parse_max_tokens, parse_sampling_fields, parse_stream}) {
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
