// Typed readers of a request body's fields, shared by the parsers of common/openai: each leaves
// `out` alone when the field is absent or null (null means "not given"), and gives the 400
// naming the field when its value has the wrong type.
#pragma once

#include "common/openai/error.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json_fwd.hpp>

namespace lanes::common::openai::fields {

using maybe_error = std::optional<api_error>;

// The field `key` of `obj`, or nullptr when it is absent or null.
const nlohmann::json* find_field(const nlohmann::json& obj, const char* key);
// "'name' must be <what>", naming `name`.
api_error must_be(const std::string& name, std::string_view what);

// An integer that fits in int64 (16.0 counts as 16, as pydantic reads an int field).
maybe_error read_int(const nlohmann::json& obj, const char* key, std::optional<std::int64_t>& out);
// The same, at least 1.
maybe_error read_positive_int(const nlohmann::json& obj, const char* key,
                              std::optional<std::int64_t>& out);
maybe_error read_number(const nlohmann::json& obj, const char* key, double& out);
maybe_error read_number(const nlohmann::json& obj, const char* key, std::optional<double>& out);
maybe_error read_bool(const nlohmann::json& obj, const char* key, bool& out);
maybe_error read_string(const nlohmann::json& obj, const char* key,
                        std::optional<std::string>& out);

} // namespace lanes::common::openai::fields
