#include "router/request/local_tokenizer.hpp"

#include "common/json_depth.hpp"
#include "router/request/request_view.hpp"

#include <nlohmann/json.hpp>
#include <simdjson.h>

#include <stdexcept>

namespace lanes::router {

using json = nlohmann::ordered_json;

namespace {

// A body as the template's JSON, read with simdjson (several times faster than building the DOM
// with nlohmann's parser, which dominated a long chat's decision). Keys keep the body's order; a
// repeated key keeps its first place and its last value, as Python's json.loads does.
json to_json(simdjson::dom::element e) {
    switch (e.type()) {
    case simdjson::dom::element_type::OBJECT: {
        json out = json::object();
        for (const auto field : simdjson::dom::object(e))
            out[std::string(field.key)] = to_json(field.value);
        return out;
    }
    case simdjson::dom::element_type::ARRAY: {
        json out = json::array();
        for (const auto v : simdjson::dom::array(e))
            out.push_back(to_json(v));
        return out;
    }
    case simdjson::dom::element_type::STRING:
        return std::string(std::string_view(e));
    case simdjson::dom::element_type::INT64:
        return std::int64_t(e);
    case simdjson::dom::element_type::UINT64:
        return std::uint64_t(e);
    case simdjson::dom::element_type::DOUBLE:
        return double(e);
    case simdjson::dom::element_type::BOOL:
        return bool(e);
    case simdjson::dom::element_type::NULL_VALUE:
        break;
    }
    return nullptr;
}

bool flag(const json& body, const char* name, bool fallback) {
    const auto it = body.find(name);
    return it != body.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

} // namespace

local_tokenizers::local_tokenizers(const local_tokenizer_settings& s) {
    for (const auto& spec : s.directories) {
        const auto eq = spec.find('=');
        const std::string model = eq == std::string::npos ? "" : spec.substr(0, eq);
        const std::string dir = eq == std::string::npos ? spec : spec.substr(eq + 1);
        if (by_model_.contains(model))
            throw std::runtime_error("--tokenizer: two tokenizers for " +
                                     (model.empty() ? std::string("every model") : model));
        by_model_[model] = common::model_tokenizer::load(dir, {s.cache_tokens});
    }
    if (const auto it = by_model_.find(""); it != by_model_.end())
        any_model_ = it->second.get();
}

const common::model_tokenizer* local_tokenizers::for_model(std::string_view model) const {
    if (const auto it = by_model_.find(model); it != by_model_.end())
        return it->second.get();
    return any_model_;
}

std::optional<std::vector<std::uint32_t>>
local_tokenizers::token_ids(std::string_view body, bool chat, const model_resolver& resolve,
                            bounds b, std::time_t now) const {
    if (!common::measure_json(body, b.max_depth, b.max_values).within)
        return std::nullopt;
    const json j = read_template_json(body);
    if (!j.is_object())
        return std::nullopt;
    std::optional<std::string> named;
    if (const auto m = j.find("model"); m != j.end() && m->is_string())
        named = m->get<std::string>();
    const common::model_tokenizer* found = for_model(resolve(named));
    if (found == nullptr)
        return std::nullopt;
    const common::model_tokenizer& t = *found;
    if (!chat) {
        const auto p = j.find("prompt");
        if (p == j.end() || !p->is_string())
            return std::nullopt; // ids already, or a batch of prompts
        return t.encode(p->get_ref<const std::string&>(), flag(j, "add_special_tokens", true));
    }
    common::chat_fields fields;
    const auto m = j.find("messages");
    if (m == j.end() || !m->is_array() || m->empty())
        return std::nullopt;
    fields.messages = &*m;
    if (const auto tools = j.find("tools"); tools != j.end() && tools->is_array())
        fields.tools = &*tools;
    if (const auto kw = j.find("chat_template_kwargs"); kw != j.end() && kw->is_object())
        fields.kwargs = &*kw;
    fields.add_generation_prompt = flag(j, "add_generation_prompt", true);
    fields.continue_final_message = flag(j, "continue_final_message", false);
    try {
        return t.encode(t.render_chat(fields, now), flag(j, "add_special_tokens", false));
    } catch (const common::chat_render_error&) {
        return std::nullopt; // the engine renders it too, and answers its 400
    }
}

json read_template_json(std::string_view body) {
    thread_local simdjson::dom::parser parser;
    simdjson::dom::element root;
    if (parser.parse(body.data(), body.size()).get(root))
        return json();
    json j = to_json(root);
    // A big body's buffers are not kept for the next (the body reader's rule).
    if (parser.capacity() > kept_read_buffer_bytes)
        parser = simdjson::dom::parser{};
    return j;
}

} // namespace lanes::router
