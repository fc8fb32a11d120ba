#include "common/openai/json_fields.hpp"

#include <cmath>
#include <limits>

#include <nlohmann/json.hpp>

namespace lanes::common::openai::fields {

using json = nlohmann::json;

namespace {

// Reads a field of JSON type `is` as a V; `out` is left alone when the field is absent.
template <typename V, typename Out>
maybe_error read_field(const json& obj, const char* key, bool (json::*is)() const noexcept,
                       std::string_view what, Out& out) {
    const json* v = find_field(obj, key);
    if (v == nullptr) {
        return std::nullopt;
    }
    if (!(v->*is)()) {
        return must_be(key, what);
    }
    out = v->get<V>();
    return std::nullopt;
}

} // namespace

const json* find_field(const json& obj, const char* key) {
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) {
        return nullptr;
    }
    return &*it;
}

api_error must_be(const std::string& name, std::string_view what) {
    return api_error::bad_request("'" + name + "' must be " + std::string(what), name);
}

maybe_error read_int(const json& obj, const char* key, std::optional<std::int64_t>& out) {
    const json* v = find_field(obj, key);
    if (v == nullptr) {
        return std::nullopt;
    }
    if (v->is_number_float()) {
        // 16.0 is 16, as pydantic reads an int field (vLLM); 16.5 is not an integer.
        const double d = v->get<double>();
        if (!(d == std::floor(d)) || std::fabs(d) > 9.0e15) {
            return must_be(key, "an integer");
        }
        out = static_cast<std::int64_t>(d);
        return std::nullopt;
    }
    if (!v->is_number_integer()) {
        return must_be(key, "an integer");
    }
    if (v->is_number_unsigned() &&
        v->get<std::uint64_t>() >
            static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max())) {
        return must_be(key, "a 64-bit signed integer");
    }
    out = v->get<std::int64_t>();
    return std::nullopt;
}

maybe_error read_positive_int(const json& obj, const char* key, std::optional<std::int64_t>& out) {
    std::optional<std::int64_t> value;
    if (auto e = read_int(obj, key, value)) {
        return e;
    }
    if (value && *value < 1) {
        return must_be(key, "at least 1");
    }
    if (value) {
        out = value;
    }
    return std::nullopt;
}

maybe_error read_number(const json& obj, const char* key, double& out) {
    return read_field<double>(obj, key, &json::is_number, "a number", out);
}

maybe_error read_bool(const json& obj, const char* key, bool& out) {
    return read_field<bool>(obj, key, &json::is_boolean, "a boolean", out);
}

maybe_error read_number(const json& obj, const char* key, std::optional<double>& out) {
    return read_field<double>(obj, key, &json::is_number, "a number", out);
}

maybe_error read_string(const json& obj, const char* key, std::optional<std::string>& out) {
    return read_field<std::string>(obj, key, &json::is_string, "a string", out);
}

} // namespace lanes::common::openai::fields
