#include "common/prompt/model_tokenizer.hpp"

#include "common/prompt/jinja.hpp"
#include "common/prompt/utf8.hpp"

#include <nlohmann/json.hpp>
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace lanes::common {

namespace {

using json = nlohmann::ordered_json;

// Runs shorter than this are encoded each time: a lookup would cost about what encoding does.
constexpr std::size_t min_cached_run_bytes = 24;

std::optional<std::string> read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in)
        return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    return std::move(text).str();
}

json read_json(const std::filesystem::path& path, const std::string& text) {
    json j = json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object())
        throw std::runtime_error(path.string() + ": not a JSON object");
    return j;
}

// A special token as tokenizer_config.json gives it: a string, or an AddedToken object.
std::optional<std::string> token_text(const json& config, const char* field) {
    const auto it = config.find(field);
    if (it == config.end() || it->is_null())
        return std::nullopt;
    if (it->is_string())
        return it->get<std::string>();
    if (it->is_object() && it->contains("content") && (*it)["content"].is_string())
        return (*it)["content"].get<std::string>();
    return std::nullopt;
}

// The template transformers would pick with no name asked: a string, or the entry named
// "default" of a list of {name, template}.
std::string template_source(const json& config, const std::string& where) {
    const auto it = config.find("chat_template");
    if (it == config.end() || it->is_null())
        return {};
    if (it->is_string())
        return it->get<std::string>();
    if (it->is_array()) {
        for (const auto& entry : *it)
            if (entry.is_object() && entry.value("name", "") == "default" &&
                entry.contains("template") && entry["template"].is_string())
                return entry["template"].get<std::string>();
        throw std::runtime_error(where + ": chat_template is a list without a 'default' entry");
    }
    throw std::runtime_error(where + ": chat_template is neither a string nor a list");
}

void add_ids(const json& value, std::vector<token_id>& ids) {
    if (value.is_number_unsigned())
        ids.push_back(value.get<token_id>());
    else if (value.is_array())
        for (const auto& v : value)
            if (v.is_number_unsigned())
                ids.push_back(v.get<token_id>());
}

std::string hex128(XXH128_hash_t h) {
    char buf[33];
    std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                  static_cast<unsigned long long>(h.low64));
    return buf;
}

// A message's content as vLLM gives it to the template: the text of its parts (a string is one
// text part; null or absent, none), joined with "\n" into one string, or, for a template that
// iterates over content parts, kept as a list of {"type": "text", "text": ...}.
json prepared_content(const json* content, bool as_parts) {
    std::vector<const std::string*> texts;
    const auto take = [&](const json& part) {
        if (part.is_string()) {
            texts.push_back(&part.get_ref<const std::string&>());
            return;
        }
        const std::string type =
            part.is_object() && part.contains("type") && part["type"].is_string()
                ? part["type"].get<std::string>()
                : std::string();
        const char* key = type == "refusal" ? "refusal" : "text";
        if (type != "text" && type != "input_text" && type != "output_text" && type != "refusal" &&
            type != "thinking")
            throw chat_render_error("only text content parts are supported (got '" + type + "')");
        const auto text = part.find(key);
        if (text != part.end() && text->is_string()) // (a part without its text is skipped)
            texts.push_back(&text->get_ref<const std::string&>());
    };
    if (content != nullptr && content->is_array()) {
        for (const auto& part : *content)
            take(part);
    } else if (content != nullptr && content->is_string()) {
        take(*content);
    } else if (content != nullptr && !content->is_null()) {
        throw chat_render_error("a message's content must be a string or a list of parts");
    }
    if (as_parts) {
        json parts = json::array();
        for (const auto* t : texts)
            parts.push_back({{"type", "text"}, {"text", *t}});
        return parts;
    }
    std::string joined;
    for (std::size_t i = 0; i < texts.size(); ++i) {
        if (i > 0)
            joined += '\n';
        joined += *texts[i];
    }
    return joined;
}

// Tool call arguments as templates expect them: an object (a JSON string is parsed; none or ""
// is {}); an empty list of calls is dropped.
void prepare_tool_calls(json& message) {
    auto calls = message.find("tool_calls");
    if (calls == message.end() || !calls->is_array())
        return;
    if (calls->empty()) {
        message.erase("tool_calls");
        return;
    }
    for (auto& call : *calls) {
        if (!call.is_object() || !call.contains("function") || !call["function"].is_object())
            continue;
        auto& fn = call["function"];
        const auto args = fn.find("arguments");
        if (args == fn.end() || args->is_null() ||
            (args->is_string() && args->get_ref<const std::string&>().empty())) {
            fn["arguments"] = json::object();
        } else if (args->is_string()) {
            json parsed = json::parse(args->get_ref<const std::string&>(), nullptr, false);
            if (parsed.is_discarded())
                throw chat_render_error("a tool call's arguments are not valid JSON");
            *args = std::move(parsed);
        }
    }
}

// The messages as vLLM hands them to the template (its chat_utils): role and content, then by
// role the tool calls and reasoning (assistant; `reasoning`, or the older `reasoning_content`,
// under both names), tool_call_id (tool), name, tools (developer); nothing else a client sent.
json prepared_messages(const json& messages, bool content_as_parts) {
    if (!messages.is_array())
        throw chat_render_error("'messages' must be an array");
    json out = json::array();
    for (const auto& m : messages) {
        if (!m.is_object() || !m.contains("role") || !m["role"].is_string())
            throw chat_render_error("each message must be an object with a string 'role'");
        const std::string& role = m["role"].get_ref<const std::string&>();
        const auto content = m.find("content");
        json p = {{"role", role},
                  {"content",
                   prepared_content(content == m.end() ? nullptr : &*content, content_as_parts)}};
        if (role == "assistant") {
            if (const auto calls = m.find("tool_calls"); calls != m.end() && !calls->is_null())
                p["tool_calls"] = *calls;
            auto reasoning = m.find("reasoning");
            if (reasoning == m.end() || reasoning->is_null())
                reasoning = m.find("reasoning_content");
            if (reasoning != m.end() && !reasoning->is_null()) {
                p["reasoning"] = *reasoning;
                p["reasoning_content"] = *reasoning;
            }
        } else if (role == "tool") {
            if (const auto id = m.find("tool_call_id"); id != m.end())
                p["tool_call_id"] = *id;
        }
        if (const auto name = m.find("name"); name != m.end() && name->is_string())
            p["name"] = *name;
        if (role == "developer") {
            const auto tools = m.find("tools");
            p["tools"] = tools == m.end() ? json() : *tools;
        }
        prepare_tool_calls(p);
        out.push_back(std::move(p));
    }
    return out;
}

// The final message's text, for continue_final_message.
std::string final_text(const json& messages) {
    if (messages.empty())
        throw chat_render_error("continue_final_message needs a final message");
    const json& content = messages.back().contains("content") ? messages.back()["content"] : json();
    if (content.is_string())
        return content.get<std::string>();
    if (content.is_array())
        for (auto it = content.rbegin(); it != content.rend(); ++it)
            if (it->is_object() && it->contains("text") && (*it)["text"].is_string())
                return (*it)["text"].get<std::string>();
    throw chat_render_error("continue_final_message needs a final message with text content");
}

std::string_view strip(std::string_view s) {
    constexpr std::string_view space = " \t\n\r\f\v";
    const auto b = s.find_first_not_of(space);
    if (b == std::string_view::npos)
        return {};
    return s.substr(b, s.find_last_not_of(space) - b + 1);
}

// transformers' continue_final_message: the rendering cut right after the final message's
// text, so that generation continues it.
std::string cut_after_final(std::string rendered, const std::string& final_message) {
    const std::string_view stripped = strip(final_message);
    const auto at = rendered.rfind(stripped);
    if (stripped.empty() || at == std::string::npos)
        throw chat_render_error(
            "continue_final_message: the final message does not appear in the rendered chat");
    const auto first = final_message.find_first_not_of(" \t\n\r\f\v");
    const std::string_view lstripped = first == std::string::npos
                                           ? std::string_view()
                                           : std::string_view(final_message).substr(first);
    const bool kept = rendered.compare(at, lstripped.size(), lstripped) == 0;
    rendered.resize(at + (kept ? lstripped.size() : stripped.size()));
    return rendered;
}

} // namespace

model_tokenizer::model_tokenizer(bpe_tokenizer bpe, std::size_t cache_ids)
    : bpe_(std::move(bpe))
    , cache_(cache_ids) {}

model_tokenizer::~model_tokenizer() = default;

std::shared_ptr<const model_tokenizer> model_tokenizer::load(const std::string& directory,
                                                             const options& opts) {
    namespace fs = std::filesystem;
    const fs::path dir(directory);
    const auto tokenizer_text = read_file(dir / "tokenizer.json");
    if (!tokenizer_text)
        throw std::runtime_error(directory + ": no readable tokenizer.json (a tokenizer "
                                             "directory holds tokenizer.json and "
                                             "tokenizer_config.json, as on the Hub)");
    auto t = std::make_shared<model_tokenizer>(bpe_tokenizer::from_json(*tokenizer_text),
                                               opts.cache_ids);
    t->directory_ = directory;
    json config = json::object();
    const fs::path config_path = dir / "tokenizer_config.json";
    if (const auto text = read_file(config_path))
        config = read_json(config_path, *text);
    std::string source;
    if (const auto jinja_file = read_file(dir / "chat_template.jinja"))
        source = *jinja_file;
    else
        source = template_source(config, config_path.string());
    if (!source.empty()) {
        try {
            t->chat_template_ = std::make_unique<jinja_template>(jinja_template::parse(source));
        } catch (const std::exception& e) {
            throw std::runtime_error(config_path.string() + ": chat_template: " + e.what());
        }
        static const std::regex iterates_content(
            R"(for\s+\w+\s+in\s+\w+(\[\s*['"]content['"]\s*\]|\.content\b))");
        t->content_as_parts_ = std::regex_search(source, iterates_content);
    }
    for (const char* name : {"bos_token", "eos_token", "unk_token", "pad_token"})
        if (auto text = token_text(config, name))
            t->special_tokens_.emplace_back(name, std::move(*text));
    for (const auto& [name, text] : t->special_tokens_) {
        if (name == "bos_token")
            t->bos_id_ = t->bpe_.find(text);
        if (name == "eos_token")
            if (const auto id = t->bpe_.find(text))
                t->eos_ids_.push_back(*id);
    }
    const fs::path generation_path = dir / "generation_config.json";
    if (const auto text = read_file(generation_path)) {
        const json generation = read_json(generation_path, *text);
        if (generation.contains("eos_token_id"))
            add_ids(generation["eos_token_id"], t->eos_ids_);
    }
    std::sort(t->eos_ids_.begin(), t->eos_ids_.end());
    t->eos_ids_.erase(std::unique(t->eos_ids_.begin(), t->eos_ids_.end()), t->eos_ids_.end());
    XXH3_state_t* state = XXH3_createState();
    XXH3_128bits_reset(state);
    XXH3_128bits_update(state, tokenizer_text->data(), tokenizer_text->size());
    XXH3_128bits_update(state, "\0", 1);
    XXH3_128bits_update(state, source.data(), source.size());
    t->digest_ = "xxh128:" + hex128(XXH3_128bits_digest(state));
    XXH3_freeState(state);
    return t;
}

bool model_tokenizer::is_eos(token_id id) const {
    return std::binary_search(eos_ids_.begin(), eos_ids_.end(), id);
}

std::vector<token_id> model_tokenizer::encode(std::string_view text,
                                              bool add_special_tokens) const {
    std::string repaired;
    if (!is_valid_utf8(text)) {
        repaired = utf8_lossy(text);
        text = repaired;
    }
    std::vector<token_id> out;
    out.reserve(text.size() / 3 + 8);
    if (add_special_tokens)
        out.insert(out.end(), bpe_.special_prefix().begin(), bpe_.special_prefix().end());
    bpe_.split_added_tokens(
        text,
        [&](std::string_view run) {
            if (run.size() < min_cached_run_bytes) {
                bpe_.encode_text(run, out);
                return;
            }
            if (cache_.find(run, out))
                return;
            const std::size_t from = out.size();
            bpe_.encode_text(run, out);
            cache_.insert(run, std::span(out).subspan(from));
        },
        [&](token_id id) { out.push_back(id); });
    if (add_special_tokens)
        out.insert(out.end(), bpe_.special_suffix().begin(), bpe_.special_suffix().end());
    return out;
}

std::string model_tokenizer::render_chat(const chat_fields& chat, std::time_t now) const {
    if (!chat_template_)
        throw chat_render_error("the model's tokenizer has no chat template, so it cannot serve "
                                "chat requests (tokenizer_config.json has no chat_template)");
    if (chat.add_generation_prompt && chat.continue_final_message)
        throw chat_render_error("continue_final_message and add_generation_prompt cannot both be "
                                "true: one continues the last message, the other starts a new one");
    if (!chat.messages)
        throw chat_render_error("'messages' is required");
    json context = json::object();
    context["messages"] = prepared_messages(*chat.messages, content_as_parts_);
    if (chat.tools && !chat.tools->is_null())
        context["tools"] = *chat.tools;
    context["add_generation_prompt"] = chat.add_generation_prompt;
    // The tokenizer's special tokens, as transformers passes its special_tokens_map: only
    // those it has (a template asks `bos_token is defined`).
    for (const auto& [name, text] : special_tokens_)
        context[name] = text;
    if (chat.kwargs && chat.kwargs->is_object())
        for (const auto& [k, v] : chat.kwargs->items())
            context[k] = v;
    std::string rendered;
    try {
        rendered = chat_template_->render(context, now);
    } catch (const template_raised& e) {
        throw chat_render_error(e.what());
    } catch (const template_render_error& e) {
        throw chat_render_error(std::string("the chat template failed: ") + e.what());
    }
    if (chat.continue_final_message)
        return cut_after_final(std::move(rendered), final_text(context["messages"]));
    return rendered;
}

} // namespace lanes::common
