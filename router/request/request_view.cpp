#include "router/request/request_view.hpp"

#include "router/request/scan.hpp"

#include "common/openai/chat_template.hpp"
#include "common/prompt/tokenizer.hpp"

#include <simdjson.h>

namespace lanes::router {

namespace od = simdjson::ondemand;

namespace {

// The second tier: simdjson's on-demand parser (the first is router/request_scan.cpp).

bool is_null(od::value& v) {
    bool null = false;
    return !v.is_null().get(null) && null;
}

// A string field, or nullopt when absent/null; false when it has another type.
bool read_string(od::value v, std::optional<std::string>& out) {
    if (is_null(v))
        return true;
    std::string_view s;
    if (v.get_string().get(s))
        return false;
    out = std::string(s);
    return true;
}

// Where a string value lies in the body, when it has no escapes (then its JSON text is the
// string itself); nullopt otherwise. `padded` is the copy simdjson parses, `body` the original.
std::optional<std::string_view> unescaped_in_body(od::value& v, std::string_view padded,
                                                  std::string_view body) {
    std::string_view raw = v.raw_json_token(); // with its quotes and any whitespace after it
    while (!raw.empty() &&
           (raw.back() == ' ' || raw.back() == '\t' || raw.back() == '\n' || raw.back() == '\r'))
        raw.remove_suffix(1);
    if (raw.size() < 2 || raw.front() != '"' || raw.back() != '"' ||
        raw.find('\\') != std::string_view::npos)
        return std::nullopt;
    const auto offset = static_cast<std::size_t>(raw.data() - padded.data()) + 1;
    return body.substr(offset, raw.size() - 2);
}

bool read_prompt(od::value v, request_view& view, std::string_view padded, std::string_view body) {
    std::string_view text;
    od::json_type type;
    if (v.type().get(type))
        return false;
    if (type == od::json_type::string) {
        if ((view.borrowed = unescaped_in_body(v, padded, body)))
            return true;
        if (v.get_string().get(text))
            return false;
        view.owned = std::string(text);
        return true;
    }
    od::array items;
    if (v.get_array().get(items))
        return false;
    std::size_t strings = 0;
    for (auto item : items) {
        od::value iv;
        if (item.get(iv))
            return false;
        od::json_type item_type;
        if (iv.type().get(item_type))
            return false;
        if (item_type == od::json_type::string) {
            if (iv.get_string().get(text) || ++strings > 1)
                return false; // batched prompts: let the full parser explain
            view.owned = std::string(text);
        } else {
            std::uint64_t id = 0;
            if (iv.get_uint64().get(id) || id >= lanes::common::vocab_size)
                return false;
            view.prompt_token_ids.push_back(static_cast<std::uint32_t>(id));
        }
    }
    return (strings == 1) != !view.prompt_token_ids.empty();
}

bool read_messages(od::value v, request_view& view, std::string_view padded,
                   std::string_view body) {
    od::array items;
    if (v.get_array().get(items))
        return false;
    // Views into the body (content without escapes) or into the parser's string buffer, which
    // both outlive the rendering below.
    std::vector<common::chat_message_view> messages;
    for (auto item : items) {
        od::object msg;
        if (item.get_object().get(msg))
            return false;
        common::chat_message_view m;
        if (msg["role"].get_string().get(m.role))
            return false;
        od::value c;
        if (msg["content"].get(c))
            return false;
        if (auto in_body = unescaped_in_body(c, padded, body))
            m.content = *in_body;
        else if (c.get_string().get(m.content))
            return false; // null or content parts: the full parser handles them
        messages.push_back(m);
    }
    if (messages.empty())
        return false;
    view.owned = common::render_chat(messages);
    return true;
}

} // namespace

std::optional<request_view> extract_request(common::openai::endpoint kind, std::string_view body) {
    if (kind == common::openai::endpoint::completions)
        if (auto view = scan_completion_request(body))
            return view;
    return extract_request_on_demand(kind, body);
}

std::optional<request_view> extract_request_on_demand(common::openai::endpoint kind,
                                                      std::string_view body) {
    thread_local od::parser parser;
    // simdjson reads up to SIMDJSON_PADDING bytes past the input: parse a padded copy, kept per
    // thread so that a request costs a copy but no allocation.
    thread_local std::string padded;
    padded.assign(body);
    padded.resize(body.size() + simdjson::SIMDJSON_PADDING);
    od::document doc;
    if (parser.iterate(padded.data(), body.size(), padded.size()).get(doc))
        return std::nullopt;
    od::object obj;
    if (doc.get_object().get(obj))
        return std::nullopt;
    request_view view;
    bool have_input = false;
    for (auto field : obj) {
        std::string_view key;
        od::value v;
        if (field.unescaped_key().get(key) || field.value().get(v))
            return std::nullopt;
        bool ok = true;
        if (key == "model") {
            ok = read_string(v, view.model);
        } else if (key == "user") {
            ok = read_string(v, view.user);
        } else if (key == "stream") {
            ok = is_null(v) || !v.get_bool().get(view.stream);
        } else if (key == "prompt" && kind == common::openai::endpoint::completions) {
            ok = have_input = read_prompt(v, view, padded, body);
        } else if (key == "messages" && kind == common::openai::endpoint::chat_completions) {
            ok = have_input = read_messages(v, view, padded, body);
        }
        if (!ok)
            return std::nullopt;
    }
    // (Bytes after the object are not checked here; the replica's full parser rejects them.)
    if (!have_input)
        return std::nullopt;
    return view;
}

} // namespace lanes::router
