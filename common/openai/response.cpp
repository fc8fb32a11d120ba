#include "common/openai/response.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <random>
#include <utility>

#include <nlohmann/json.hpp>

namespace lanes::common::openai {

namespace {

using ojson = nlohmann::ordered_json;

std::string dump(const ojson& j) {
    return j.dump(-1, ' ', false, ojson::error_handler_t::replace);
}

// Appends `s` as a JSON string literal, exactly as dump() writes it. Text that needs no escaping
// (printable ASCII without quote or backslash: most of it) is copied as it is; anything else
// goes through the JSON library, which escapes control bytes and replaces invalid UTF-8.
void append_json_string(std::string& out, std::string_view s) {
    const bool plain = std::all_of(
        s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
    if (plain) {
        out += '"';
        out += s;
        out += '"';
        return;
    }
    out += dump(ojson(s));
}

ojson usage_object(const usage& u) {
    ojson j = {{"prompt_tokens", u.prompt_tokens},
               {"total_tokens", u.prompt_tokens + u.completion_tokens},
               {"completion_tokens", u.completion_tokens}};
    if (u.cached_tokens) {
        j["prompt_tokens_details"] = ojson{{"cached_tokens", *u.cached_tokens}};
    }
    return j;
}

ojson envelope(const response_meta& meta, std::string_view object) {
    return ojson{
        {"id", meta.id}, {"object", object}, {"created", meta.created}, {"model", meta.model}};
}

ojson finish_value(std::string_view finish_reason) {
    return finish_reason.empty() ? ojson(nullptr) : ojson(finish_reason);
}

ojson stop_value(const stop_reason& stop) {
    if (stop.text)
        return ojson(*stop.text);
    if (stop.token)
        return ojson(*stop.token);
    return ojson(nullptr);
}

// {"index":0, key:value, "logprobs":..., "finish_reason":..., ["stop_reason":...]}
ojson choice(const char* key, ojson value, std::string_view finish_reason, bool with_stop_reason,
             const stop_reason& stop = {}, std::string_view logprobs = {}) {
    ojson c = {{"index", 0},
               {key, std::move(value)},
               {"logprobs", logprobs.empty() ? ojson(nullptr) : ojson::parse(logprobs)},
               {"finish_reason", finish_value(finish_reason)}};
    if (with_stop_reason) {
        c["stop_reason"] = stop_value(stop);
    }
    return c;
}

double floored(double logprob) { // vLLM: max(logprob, -9999.0); NaN has no JSON form
    return std::isnan(logprob) ? -9999.0 : std::max(logprob, -9999.0);
}

std::size_t code_points(std::string_view s) {
    return static_cast<std::size_t>(std::count_if(
        s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xc0) != 0x80; }));
}

ojson chat_logprob(const logprob_entry& e) {
    ojson bytes = ojson::array();
    for (const char c : e.token)
        bytes.push_back(static_cast<unsigned char>(c));
    return {{"token", e.token}, {"logprob", floored(e.logprob)}, {"bytes", std::move(bytes)}};
}

} // namespace

// Two hex digits per byte value, so an id's 16 random bytes take 16 lookups (every proxied request
// gets an id).
constexpr std::array<std::array<char, 2>, 256> hex_pairs = [] {
    constexpr std::string_view digits = "0123456789abcdef";
    std::array<std::array<char, 2>, 256> t{};
    for (std::size_t b = 0; b < 256; ++b)
        t[b] = {digits[b >> 4], digits[b & 0xf]};
    return t;
}();

std::string make_id(std::string_view prefix) {
    thread_local std::mt19937_64 rng{std::random_device{}()};
    std::string id(prefix.size() + 32, '\0');
    std::copy(prefix.begin(), prefix.end(), id.begin());
    char* out = id.data() + prefix.size();
    for (std::size_t word = 0; word < 2; ++word) {
        const std::uint64_t bits = rng();
        for (std::size_t i = 0; i < 8; ++i, out += 2) {
            const auto& pair = hex_pairs[(bits >> (56 - 8 * i)) & 0xff];
            out[0] = pair[0];
            out[1] = pair[1];
        }
    }
    return id;
}

std::string logprobs_json(endpoint kind, std::span<const token_logprob> tokens, std::size_t num_top,
                          std::size_t& text_offset) {
    if (kind == endpoint::chat_completions) {
        ojson content = ojson::array();
        for (const auto& t : tokens) {
            ojson entry = chat_logprob(t.chosen);
            ojson top = ojson::array();
            for (std::size_t i = 0; i < t.alternatives.size() && i < num_top; ++i)
                top.push_back(chat_logprob(t.alternatives[i]));
            entry["top_logprobs"] = std::move(top);
            content.push_back(std::move(entry));
        }
        return dump(ojson{{"content", std::move(content)}});
    }
    ojson offsets = ojson::array(), logprobs = ojson::array(), names = ojson::array(),
          tops = ojson::array();
    for (const auto& t : tokens) {
        offsets.push_back(text_offset);
        text_offset += code_points(t.chosen.token);
        logprobs.push_back(floored(t.chosen.logprob));
        names.push_back(t.chosen.token);
        ojson top = ojson::object(); // keyed by text: alternatives that decode alike are one
        for (const auto& a : t.alternatives)
            top[a.token] = floored(a.logprob);
        tops.push_back(std::move(top));
    }
    return dump(ojson{{"text_offset", std::move(offsets)},
                      {"token_logprobs", std::move(logprobs)},
                      {"tokens", std::move(names)},
                      {"top_logprobs", std::move(tops)}});
}

std::string completion_json(endpoint kind, const response_meta& meta, std::string_view text,
                            std::string_view finish_reason, const usage& u, const stop_reason& stop,
                            std::string_view logprobs) {
    bool chat = kind == endpoint::chat_completions;
    ojson j = envelope(meta, chat ? "chat.completion" : "text_completion");
    ojson c = chat ? choice("message", {{"role", "assistant"}, {"content", text}}, finish_reason,
                            true, stop, logprobs)
                   : choice("text", text, finish_reason, true, stop, logprobs);
    j["choices"] = ojson::array({std::move(c)});
    j["usage"] = usage_object(u);
    return dump(j);
}

std::string chat_role_chunk(const response_meta& meta) {
    ojson j = envelope(meta, "chat.completion.chunk");
    ojson delta = {{"role", "assistant"}, {"content", ""}};
    j["choices"] = ojson::array({choice("delta", std::move(delta), {}, false)});
    return dump(j);
}

// Written straight into one string, byte for byte what dumping the equivalent ordered_json gives
// (a test holds the two equal): a streamed response makes one of these per token, and building
// and serializing a JSON tree for each was the largest part of the replica's CPU per token.
std::string delta_chunk(endpoint kind, const response_meta& meta, std::string_view text,
                        std::string_view finish_reason, const stop_reason& stop,
                        std::string_view logprobs) {
    const bool completions = kind == endpoint::completions;
    std::string out;
    out.reserve(192 + meta.id.size() + meta.model.size() + text.size() + logprobs.size());
    out += R"({"id":)";
    append_json_string(out, meta.id);
    out += completions ? R"(,"object":"text_completion")" : R"(,"object":"chat.completion.chunk")";
    out += R"(,"created":)";
    out += std::to_string(meta.created);
    out += R"(,"model":)";
    append_json_string(out, meta.model);
    out += completions ? R"(,"choices":[{"index":0,"text":)"
                       : R"(,"choices":[{"index":0,"delta":{"content":)";
    append_json_string(out, text);
    out += completions ? R"(,"logprobs":)" : R"(},"logprobs":)";
    out += logprobs.empty() ? std::string_view("null") : logprobs;
    out += R"(,"finish_reason":)";
    if (finish_reason.empty())
        out += "null";
    else
        append_json_string(out, finish_reason);
    // Completions carry stop_reason on every chunk, chat on its last (as vLLM serializes them).
    if (completions || !finish_reason.empty()) {
        out += R"(,"stop_reason":)";
        if (stop.text)
            append_json_string(out, *stop.text);
        else if (stop.token)
            out += std::to_string(*stop.token);
        else
            out += "null";
    }
    out += completions ? R"(}],"usage":null})" : "}]}";
    return out;
}

std::string usage_chunk(endpoint kind, const response_meta& meta, const usage& u) {
    ojson j =
        envelope(meta, kind == endpoint::completions ? "text_completion" : "chat.completion.chunk");
    j["choices"] = ojson::array();
    j["usage"] = usage_object(u);
    return dump(j);
}

} // namespace lanes::common::openai
