#include "common/openai/field_check.hpp"

#include <array>
#include <span>
#include <string>

#include <simdjson.h>

namespace lanes::common::openai {

namespace {

namespace od = simdjson::ondemand;

// Whether a field's name, as written in the body, holds an escape (asked before unescaping it).
bool written_with_escapes(od::field& f) {
    for (const char* p = f.key().raw(); *p != '"'; ++p)
        if (*p == '\\')
            return true;
    return false;
}

// One object's fields against `names` (each read once, under its plain name). `where` prefixes
// the field in the message ("messages[2]"). A field named in `descend` is handed to it. Malformed
// JSON sets `malformed` and ends the check (the parser that follows says what is wrong), as the
// router's reader stops at it: nothing after it is judged.
template <class Descend>
std::optional<api_error> check_object(od::object& obj, std::span<const std::string_view> names,
                                      const std::string& where, bool& malformed,
                                      Descend&& descend) {
    unsigned seen = 0;
    for (auto item : obj) {
        od::field field;
        if (std::move(item).get(field)) {
            malformed = true;
            return std::nullopt;
        }
        const bool escaped = written_with_escapes(field);
        std::string_view key;
        if (field.unescaped_key().get(key)) {
            malformed = true;
            return std::nullopt;
        }
        unsigned bit = 0, i = 0;
        for (const auto name : names) {
            if (name == key)
                bit = 1u << i;
            ++i;
        }
        if (bit != 0 && (escaped || (seen & bit))) {
            const std::string full =
                where.empty() ? std::string(key) : where + "." + std::string(key);
            return api_error::bad_request(
                escaped ? "the field name '" + full + "' is written with escapes; write it plainly"
                        : "the field '" + full + "' is given more than once",
                full);
        }
        seen |= bit;
        od::value value = field.value();
        if (auto e = descend(key, value); e || malformed)
            return e;
    }
    return std::nullopt;
}

std::optional<api_error> check_messages(od::value& value, bool& malformed) {
    od::json_type type;
    if (value.type().get(type)) {
        malformed = true;
        return std::nullopt;
    }
    if (type != od::json_type::array)
        return std::nullopt; // the parser that follows says what it must be
    od::array messages;
    if (value.get_array().get(messages)) {
        malformed = true;
        return std::nullopt;
    }
    std::size_t index = 0;
    for (auto element : messages) {
        od::value message;
        if (element.get(message) || message.type().get(type)) {
            malformed = true;
            return std::nullopt;
        }
        const std::string where = "messages[" + std::to_string(index++) + "]";
        if (type != od::json_type::object)
            continue;
        od::object obj;
        if (message.get_object().get(obj)) {
            malformed = true;
            return std::nullopt;
        }
        static constexpr std::array<std::string_view, 2> fields{"role", "content"};
        if (auto e = check_object(obj, fields, where, malformed,
                                  [](std::string_view, od::value&) -> std::optional<api_error> {
                                      return std::nullopt;
                                  });
            e || malformed)
            return e;
    }
    return std::nullopt;
}

} // namespace

std::optional<api_error> check_read_fields(endpoint kind, std::string_view body) {
    const simdjson::padded_string padded(body);
    od::parser parser;
    od::document doc;
    if (parser.iterate(padded).get(doc))
        return std::nullopt;
    od::object obj;
    if (doc.get_object().get(obj))
        return std::nullopt;
    const bool chat = kind == endpoint::chat_completions;
    static constexpr std::array<std::string_view, 5> chat_fields{"model", "messages", "stream",
                                                                 "user", "tools"};
    static constexpr std::array<std::string_view, 4> completion_fields{"model", "prompt", "stream",
                                                                       "user"};
    const std::span<const std::string_view> names =
        chat ? std::span<const std::string_view>(chat_fields) : completion_fields;
    bool malformed = false;
    return check_object(
        obj, names, "", malformed,
        [chat, &malformed](std::string_view key, od::value& v) -> std::optional<api_error> {
            if (chat && key == "messages")
                return check_messages(v, malformed);
            return std::nullopt;
        });
}

} // namespace lanes::common::openai
