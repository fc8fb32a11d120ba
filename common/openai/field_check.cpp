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
// the field in the message ("messages[2]"). A field named in `descend` is handed to it.
template <class Descend>
std::optional<api_error> check_object(od::object& obj, std::span<const std::string_view> names,
                                      const std::string& where, Descend&& descend) {
    unsigned seen = 0;
    for (auto item : obj) {
        od::field field;
        if (std::move(item).get(field))
            return std::nullopt; // malformed: the parser that follows says so
        const bool escaped = written_with_escapes(field);
        std::string_view key;
        if (field.unescaped_key().get(key))
            return std::nullopt;
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
        if (auto e = descend(key, value))
            return e;
    }
    return std::nullopt;
}

std::optional<api_error> check_messages(od::value& value) {
    od::array messages;
    if (value.get_array().get(messages))
        return std::nullopt; // not an array: the parser that follows says what it must be
    std::size_t index = 0;
    for (auto element : messages) {
        od::value message;
        if (element.get(message))
            return std::nullopt;
        od::object obj;
        const std::string where = "messages[" + std::to_string(index++) + "]";
        if (message.get_object().get(obj))
            continue;
        static constexpr std::array<std::string_view, 2> fields{"role", "content"};
        if (auto e = check_object(obj, fields, where,
                                  [](std::string_view, od::value&) -> std::optional<api_error> {
                                      return std::nullopt;
                                  }))
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
    return check_object(obj, names, "",
                        [chat](std::string_view key, od::value& v) -> std::optional<api_error> {
                            if (chat && key == "messages")
                                return check_messages(v);
                            return std::nullopt;
                        });
}

} // namespace lanes::common::openai
