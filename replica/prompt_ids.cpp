#include "replica/prompt_ids.hpp"

#include "common/prompt/utf8.hpp"

#include <nlohmann/json.hpp>

namespace lanes::replica {

namespace openai = common::openai;
using json = nlohmann::ordered_json;

namespace {

std::optional<openai::api_error> flag(const json& body, const char* name, bool& out) {
    const auto it = body.find(name);
    if (it == body.end() || it->is_null())
        return std::nullopt;
    if (!it->is_boolean())
        return openai::api_error::bad_request(std::string("'") + name + "' must be a boolean",
                                              name);
    out = it->get<bool>();
    return std::nullopt;
}

prompt_ids_result byte_ids(const openai::generation_request& g, const json* body) {
    prompt_ids_result r;
    if (!g.prompt_token_ids.empty()) {
        r.ids.assign(g.prompt_token_ids.begin(), g.prompt_token_ids.end());
        if (r.ids.front() != common::bos_token)
            r.ids.insert(r.ids.begin(), common::bos_token);
    } else {
        r.ids = common::encode_prompt(g.prompt);
    }
    bool special = true;
    if (body != nullptr) {
        if ((r.error = flag(*body, "add_special_tokens", special)))
            return r;
        if (!special && !r.ids.empty() && r.ids.front() == common::bos_token)
            r.ids.erase(r.ids.begin());
    }
    return r;
}

prompt_ids_result model_ids(const openai::generation_request& g, const json& body,
                            const common::model_tokenizer& t, std::time_t now) {
    prompt_ids_result r;
    const bool chat = g.kind == openai::endpoint::chat_completions;
    if (!g.prompt_token_ids.empty()) {
        // As given: parse_generation_request held them to the vocabulary (request_limits).
        r.ids.assign(g.prompt_token_ids.begin(), g.prompt_token_ids.end());
        return r;
    }
    bool special = !chat;
    if ((r.error = flag(body, "add_special_tokens", special)))
        return r;
    if (!chat) {
        r.ids = t.encode(g.prompt, special);
        return r;
    }
    common::chat_fields fields;
    fields.messages = &body["messages"];
    if ((r.error = flag(body, "add_generation_prompt", fields.add_generation_prompt)) ||
        (r.error = flag(body, "continue_final_message", fields.continue_final_message)))
        return r;
    if (const auto tools = body.find("tools"); tools != body.end() && !tools->is_null()) {
        if (!tools->is_array()) {
            r.error = openai::api_error::bad_request("'tools' must be an array", "tools");
            return r;
        }
        fields.tools = &*tools;
    }
    if (const auto kw = body.find("chat_template_kwargs"); kw != body.end() && !kw->is_null()) {
        if (!kw->is_object()) {
            r.error = openai::api_error::bad_request("'chat_template_kwargs' must be an object",
                                                     "chat_template_kwargs");
            return r;
        }
        fields.kwargs = &*kw;
    }
    try {
        r.ids = t.encode(t.render_chat(fields, now), special);
    } catch (const common::chat_render_error& e) {
        r.error = openai::api_error::bad_request(e.what(), "messages");
    }
    return r;
}

} // namespace

prompt_ids_result prompt_ids(const openai::generation_request& g, std::string_view body_text,
                             const vocabulary& vocab, std::time_t now) {
    // The byte vocabulary needs the body again only for add_special_tokens: a body that does
    // not name it is not parsed twice.
    if (vocab.model() == nullptr && body_text.find("add_special_tokens") == std::string_view::npos)
        return byte_ids(g, nullptr);
    // The body passed parse_generation_request's shape and field checks already.
    const json body = json::parse(body_text, nullptr, false);
    if (!body.is_object()) {
        prompt_ids_result r;
        r.error = openai::api_error::bad_request("the body must be a JSON object");
        return r;
    }
    if (vocab.model() == nullptr)
        return byte_ids(g, &body);
    return model_ids(g, body, *vocab.model(), now);
}

std::vector<std::string> token_strings(const vocabulary& vocab,
                                       std::span<const common::token_id> ids) {
    std::vector<std::string> out;
    out.reserve(ids.size());
    if (vocab.model() == nullptr) {
        for (const auto id : ids)
            out.push_back(common::decode(std::span(&id, 1)));
        return out;
    }
    const auto& bpe = vocab.model()->bpe();
    const auto alphabet = common::byte_level_alphabet();
    for (const auto id : ids) {
        const std::string_view bytes = bpe.token_bytes(id);
        std::string spelled;
        if (bpe.is_special(id)) {
            spelled = bytes;
        } else {
            for (const unsigned char b : bytes)
                common::append_utf8(spelled, alphabet[b]);
        }
        out.push_back(std::move(spelled));
    }
    return out;
}

} // namespace lanes::replica
