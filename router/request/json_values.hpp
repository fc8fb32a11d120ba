// Reading single values of a body with simdjson's on-demand parser, as the router's body reader
// needs them: strictly typed (a value of another type is not read), and viewed in the original
// body rather than copied where its JSON text is the value itself.
#pragma once

#include <simdjson.h>

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::router::json_values {

// Whether a field's raw name (as it appears in the body) holds an escape. Ask before
// unescaped_key(), which consumes the raw name.
bool escaped_name(simdjson::ondemand::field& f);

// (Inline: asked of nearly every value read.)
inline bool is_type(simdjson::ondemand::value& v, simdjson::ondemand::json_type type) {
    simdjson::ondemand::json_type t;
    return !v.type().get(t) && t == type;
}

// Where a string value lies in the body, when it has no escapes (then its JSON text is the string
// itself); nullopt otherwise. `padded` is the copy simdjson parses, `body` the original.
std::optional<std::string_view> unescaped_in_body(simdjson::ondemand::value& v,
                                                  std::string_view padded, std::string_view body);

// A string value, or nullopt for any other type (which the router then does not read).
std::optional<std::string> string_of(simdjson::ondemand::value& v);

// The raw JSON text of any value: objects and arrays whole, scalars as their token.
simdjson::error_code raw_text(simdjson::ondemand::value& v, std::string_view& out);

// Token ids, when every element of `a` is an integer id that fits 32 bits; else none are read.
simdjson::error_code read_ids(simdjson::ondemand::array a, std::vector<std::uint32_t>& ids);

} // namespace lanes::router::json_values
