// The on-demand reader of a request body (simdjson's ondemand API): the fields read with one
// meaning and their refusals, and body_reader, which reads the prompt, the messages or the
// responses input into a request_view. Private to request_view.cpp, its only includer; a header
// of its own so that the reading of each field is a file apart from the walk over the body.
#pragma once

#include "common/openai/chat_template.hpp"
#include "common/openai/error.hpp"
#include "router/request/json_values.hpp"
#include "router/request/request_view.hpp"

#include <simdjson.h>
#include <xxhash.h>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::router::detail {

namespace od = simdjson::ondemand;
using common::openai::api_error;
using namespace json_values;

// The fields whose reading must be unambiguous: each may appear once, under its plain name.
enum field_bit : unsigned {
    f_model = 1,
    f_prompt = 2,
    f_messages = 4,
    f_stream = 8,
    f_user = 16,
    f_tools = 32,
    f_input = 64,
    f_instructions = 128,
    f_previous = 256,
};

struct named_field {
    std::string_view name;
    unsigned bit;
};

inline constexpr std::array<named_field, 9> top_fields{{{"model", f_model},
                                                        {"prompt", f_prompt},
                                                        {"messages", f_messages},
                                                        {"stream", f_stream},
                                                        {"user", f_user},
                                                        {"tools", f_tools},
                                                        {"input", f_input},
                                                        {"instructions", f_instructions},
                                                        {"previous_response_id", f_previous}}};

// Checks a field against the ones read with one meaning: a repeat, or a read name spelled with
// escapes, is the 400. `bit` is the field's, or 0 for a field not read.
inline std::optional<api_error> check_name(std::string_view name, bool escaped, unsigned bit,
                                           unsigned& seen, std::string_view where = {},
                                           std::size_t index = 0) {
    if (bit == 0 || (!escaped && !(seen & bit))) {
        seen |= bit;
        return std::nullopt;
    }
    const std::string full =
        where.empty() ? std::string(name)
                      : std::string(where) + "[" + std::to_string(index) + "]." + std::string(name);
    if (escaped)
        return api_error::bad_request(
            "the field name '" + full + "' is written with escapes; write it plainly", full);
    return api_error::bad_request("the field '" + full + "' is given more than once", full);
}

inline std::uint64_t hash_text(std::string_view s, std::uint64_t seed = 0) {
    return XXH3_64bits_withSeed(s.data(), s.size(), seed);
}

// One message of a conversation as the chat template takes it. Its content is viewed in the
// request body while it is one string without escapes, and copied once it is more (content parts,
// a tool call's arguments) or had to be unescaped.
struct turn {
    std::string_view role; // in the body or the parser's buffer, both kept until the rendering
    std::string owned;
    std::optional<std::string_view> borrowed; // the content, in the request body

    std::string_view content() const { return borrowed ? *borrowed : std::string_view(owned); }
    // The content as a string to add to: what was viewed so far is copied first.
    std::string& owned_text() {
        if (borrowed) {
            owned.assign(*borrowed);
            borrowed.reset();
        }
        return owned;
    }
    // Adds text that lies in the request body: viewed when it is the first piece.
    void view(std::string_view in_body) {
        if (!borrowed && owned.empty())
            borrowed = in_body;
        else
            owned_text() += in_body;
    }
    // Adds text from anywhere else (copied).
    void append(std::string_view text) { owned_text() += text; }
};

class body_reader {
public:
    body_reader(std::string_view body, std::string_view padded, request_view& view)
        : body_(body)
        , padded_(padded)
        , view_(view) {}

    // The completions prompt: a string, or the first of a batch of strings, or token ids (one
    // list, or the first of a batch of lists). An array is read once, front to back.
    simdjson::error_code prompt(od::value v) {
        od::json_type t;
        if (auto e = v.type().get(t))
            return e;
        if (t == od::json_type::string)
            return text_of(v);
        if (t != od::json_type::array)
            return simdjson::SUCCESS;
        od::array items;
        if (auto e = v.get_array().get(items))
            return e;
        bool first = true, all_ids = true;
        for (auto item : items) {
            od::value x;
            if (auto e = item.get(x))
                return e;
            od::json_type xt;
            if (auto e = x.type().get(xt))
                return e;
            if (first) {
                first = false;
                if (xt == od::json_type::string) // a batch of prompts: routed on the first
                    return text_of(x);
                if (xt == od::json_type::array) { // a batch of id lists: the first
                    od::array ids;
                    if (auto e = x.get_array().get(ids))
                        return e;
                    return read_ids(ids, view_.prompt_token_ids);
                }
            }
            std::uint64_t id = 0;
            if (xt != od::json_type::number || x.get_uint64().get(id) || id > UINT32_MAX)
                all_ids = false;
            else if (all_ids)
                view_.prompt_token_ids.push_back(static_cast<std::uint32_t>(id));
        }
        if (!all_ids)
            view_.prompt_token_ids.clear();
        return simdjson::SUCCESS;
    }

    // Chat messages: role and content of each; content parts give their text, and for the other
    // parts a marker with a hash of their payload (an image's URL or data), so that the same
    // image in the same conversation keeps its affinity.
    simdjson::error_code messages(od::value v, std::optional<api_error>& refusal) {
        od::array items;
        if (!is_type(v, od::json_type::array))
            return simdjson::SUCCESS;
        if (auto e = v.get_array().get(items))
            return e;
        std::size_t index = 0;
        for (auto item : items) {
            od::value m;
            if (auto e = item.get(m))
                return e;
            if (!is_type(m, od::json_type::object)) {
                ++index;
                continue;
            }
            if (auto e = message(m, "messages", index++, refusal); e || refusal)
                return e;
        }
        return simdjson::SUCCESS;
    }

    // A responses request's input: a string (one user message), or items with role and content.
    simdjson::error_code input(od::value v, std::optional<api_error>& refusal) {
        od::json_type t;
        if (auto e = v.type().get(t))
            return e;
        if (t == od::json_type::string) {
            turn user{"user"};
            if (auto e = string_content(v, user))
                return e;
            messages_.push_back(std::move(user));
            return simdjson::SUCCESS;
        }
        if (t != od::json_type::array)
            return simdjson::SUCCESS;
        od::array items;
        if (auto e = v.get_array().get(items))
            return e;
        std::size_t index = 0;
        for (auto item : items) {
            od::value m;
            if (auto e = item.get(m))
                return e;
            if (is_type(m, od::json_type::object)) {
                if (auto e = message(m, "input", index, refusal); e || refusal)
                    return e;
            }
            ++index;
        }
        return simdjson::SUCCESS;
    }

    void instructions(std::string text) { instructions_ = std::move(text); }

    // The rendered conversation, for chat and responses bodies.
    void render() {
        std::vector<common::chat_message_view> views;
        if (instructions_)
            views.push_back({"system", *instructions_});
        for (const auto& m : messages_)
            views.push_back({m.role, m.content()});
        if (!views.empty())
            view_.owned = common::render_chat(views);
    }

    bool any_messages() const { return instructions_ || !messages_.empty(); }

private:
    simdjson::error_code text_of(od::value& v) {
        if ((view_.borrowed = unescaped_in_body(v, padded_, body_)))
            return simdjson::SUCCESS;
        std::string_view s;
        if (auto e = v.get_string().get(s))
            return e;
        view_.owned = std::string(s);
        return simdjson::SUCCESS;
    }

    // `where`[`index`]: the message's place, named in a refusal.
    simdjson::error_code message(od::value& m, std::string_view where, std::size_t index,
                                 std::optional<api_error>& refusal) {
        od::object fields;
        if (auto e = m.get_object().get(fields))
            return e;
        turn t;
        unsigned seen = 0;
        for (auto item : fields) {
            od::field field;
            if (auto e = std::move(item).get(field))
                return e;
            const bool escaped = escaped_name(field); // (the raw name: before unescaping it)
            std::string_view key;
            if (auto e = field.unescaped_key().get(key))
                return e;
            const unsigned bit = key == "role" ? 1u : key == "content" ? 2u : 0u;
            if ((refusal = check_name(key, escaped, bit, seen, where, index)))
                return simdjson::SUCCESS;
            od::value value = field.value();
            if (bit == 1) {
                if (is_type(value, od::json_type::string) && value.get_string().get(t.role))
                    t.role = {};
            } else if (bit == 2) {
                if (auto e = content_of(value, t))
                    return e;
            } else if (key == "output" || key == "arguments") {
                // A tool call or its result in a responses input: what the model saw.
                std::string_view raw;
                if (auto e = raw_text(value, raw))
                    return e;
                t.append(raw);
            }
        }
        if (t.role.empty())
            t.role = "item";
        messages_.push_back(std::move(t));
        return simdjson::SUCCESS;
    }

    // A string content: viewed in the body when it has no escapes (a long prompt is not copied).
    simdjson::error_code string_content(od::value& v, turn& t) {
        if (auto text = unescaped_in_body(v, padded_, body_)) {
            t.view(*text);
            return simdjson::SUCCESS;
        }
        std::string_view s;
        if (auto e = v.get_string().get(s))
            return e;
        t.append(s);
        return simdjson::SUCCESS;
    }

    simdjson::error_code content_of(od::value& v, turn& out) {
        od::json_type t;
        if (auto e = v.type().get(t))
            return e;
        if (t == od::json_type::string)
            return string_content(v, out);
        if (t != od::json_type::array)
            return simdjson::SUCCESS; // null: no content (an assistant's tool call)
        od::array parts;
        if (auto e = v.get_array().get(parts))
            return e;
        for (auto item : parts) {
            od::value part;
            if (auto e = item.get(part))
                return e;
            if (auto e = part_of(part, out.owned_text()))
                return e;
        }
        return simdjson::SUCCESS;
    }

    // One content part: the text of a text part; a marker with the payload's hash for any other.
    simdjson::error_code part_of(od::value& part, std::string& out) {
        if (!is_type(part, od::json_type::object)) {
            std::string_view raw;
            if (auto e = raw_text(part, raw))
                return e;
            out += "<|part:" + std::to_string(hash_text(raw)) + "|>";
            return simdjson::SUCCESS;
        }
        od::object fields;
        if (auto e = part.get_object().get(fields))
            return e;
        std::string type, text;
        std::uint64_t payload = 0;
        for (auto item : fields) {
            od::field field;
            if (auto e = std::move(item).get(field))
                return e;
            std::string_view key;
            if (auto e = field.unescaped_key().get(key))
                return e;
            od::value value = field.value();
            if (key == "type") {
                type = string_of(value).value_or("");
            } else if (key == "text") {
                text = string_of(value).value_or("");
            } else {
                std::string_view raw;
                if (auto e = raw_text(value, raw))
                    return e;
                payload = hash_text(raw, hash_text(key, payload));
            }
        }
        if (type == "text" || type == "input_text" || type == "output_text")
            out += text;
        else
            out += "<|" + type + ":" + std::to_string(payload) + "|>";
        return simdjson::SUCCESS;
    }

    std::string_view body_;
    std::string_view padded_;
    request_view& view_;
    std::optional<std::string> instructions_;
    std::vector<turn> messages_;
};

} // namespace lanes::router::detail
