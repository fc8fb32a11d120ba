// Jinja values as Python sees them: conversion from JSON, truthiness, equality and order, and the
// UTF-8 code points that str's length, indexing and slicing count in.
#include "common/prompt/jinja_impl.hpp"

#include "common/prompt/utf8.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace lanes::common::jinja_detail {

value value::with_kind(kind k) {
    value v;
    v.k = k;
    return v;
}
value value::boolean_v(bool x) {
    value v = with_kind(kind::boolean);
    v.b = x;
    return v;
}
value value::integer_v(std::int64_t x) {
    value v = with_kind(kind::integer);
    v.i = x;
    return v;
}
value value::floating_v(double x) {
    value v = with_kind(kind::floating);
    v.f = x;
    return v;
}
value value::string_v(std::string x) {
    charge(x.size());
    value v = with_kind(kind::string);
    v.s = std::move(x);
    return v;
}
namespace {
std::uint8_t nested(int deepest) {
    if (deepest + 1 > max_value_depth) {
        fail("lists and dicts nested over " + std::to_string(max_value_depth) + " deep");
    }
    return static_cast<std::uint8_t>(deepest + 1);
}
} // namespace

value value::list_v(list_t x) {
    value v = with_kind(kind::list);
    int deepest = 0;
    for (const auto& item : x) {
        deepest = std::max<int>(deepest, item.depth);
    }
    v.depth = nested(deepest);
    charge(x.size() * sizeof(value));
    v.l = std::make_shared<list_t>(std::move(x));
    return v;
}
value value::dict_v(dict_t x) {
    value v = with_kind(kind::dict);
    int deepest = 0;
    for (const auto& item : x.items) {
        deepest = std::max<int>(deepest, item.second.depth);
    }
    v.depth = nested(deepest);
    charge(x.items.size() * sizeof(x.items[0]));
    v.d = std::make_shared<dict_t>(std::move(x));
    return v;
}
value value::undefined_v(std::string hint) {
    value v;
    v.s = std::move(hint);
    return v;
}

const value* dict_t::find(std::string_view key) const {
    for (const auto& [k, v] : items) {
        if (k == key) {
            return &v;
        }
    }
    return nullptr;
}

void dict_t::set(const std::string& key, value v) {
    for (auto& [k, old] : items) {
        if (k == key) {
            old = std::move(v);
            return;
        }
    }
    items.emplace_back(key, std::move(v));
}

void fail(const std::string& message) {
    throw template_render_error("chat template: " + message);
}

namespace {
thread_local std::size_t work_bytes = 0;
} // namespace

void charge(std::size_t bytes) {
    work_bytes += bytes;
    if (work_bytes > max_work_bytes) {
        fail("over " + std::to_string(max_work_bytes) + " bytes built or copied");
    }
}

void reset_work() {
    work_bytes = 0;
}

value charged_copy(const value& v) {
    charge(v.s.size());
    return v;
}

void check_size(std::size_t bytes) {
    if (bytes > max_output_bytes) {
        fail("output over " + std::to_string(max_output_bytes) + " bytes");
    }
}

namespace {

template <typename Json>
value convert(const Json& j) {
    switch (j.type()) {
    case nlohmann::json::value_t::null:
        return value::none_v();
    case nlohmann::json::value_t::boolean:
        return value::boolean_v(j.template get<bool>());
    case nlohmann::json::value_t::number_integer:
        return value::integer_v(j.template get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned: {
        const auto u = j.template get<std::uint64_t>();
        if (u > static_cast<std::uint64_t>(INT64_MAX)) {
            return value::floating_v(static_cast<double>(u));
        }
        return value::integer_v(static_cast<std::int64_t>(u));
    }
    case nlohmann::json::value_t::number_float:
        return value::floating_v(j.template get<double>());
    case nlohmann::json::value_t::string:
        return value::string_v(j.template get<std::string>());
    case nlohmann::json::value_t::array: {
        list_t items;
        items.reserve(j.size());
        for (const auto& item : j) {
            items.push_back(convert(item));
        }
        return value::list_v(std::move(items));
    }
    case nlohmann::json::value_t::object: {
        dict_t d;
        d.items.reserve(j.size());
        for (auto it = j.begin(); it != j.end(); ++it) {
            d.items.emplace_back(it.key(), convert(it.value()));
        }
        return value::dict_v(std::move(d));
    }
    default:
        return value::none_v();
    }
}

} // namespace

value from_json(const nlohmann::json& j) {
    return convert(j);
}
value from_json(const nlohmann::ordered_json& j) {
    return convert(j);
}

bool truthy(const value& v) {
    if (v.lazy) {
        return true;
    }
    switch (v.k) {
    case kind::undefined:
    case kind::none:
        return false;
    case kind::boolean:
        return v.b;
    case kind::integer:
        return v.i != 0;
    case kind::floating:
        return v.f != 0;
    case kind::string:
        return !v.s.empty();
    case kind::list:
        return !v.l->empty();
    case kind::dict:
        return !v.d->items.empty();
    default:
        return true;
    }
}

const char* type_name(const value& v) {
    switch (v.k) {
    case kind::undefined:
        return "Undefined";
    case kind::none:
        return "NoneType";
    case kind::boolean:
        return "bool";
    case kind::integer:
        return "int";
    case kind::floating:
        return "float";
    case kind::string:
        return "str";
    case kind::list:
        return "list";
    case kind::dict:
        return "dict";
    case kind::ns:
        return "Namespace";
    case kind::function:
        return "function";
    }
    return "object";
}

double as_double(const value& v) {
    switch (v.k) {
    case kind::boolean:
        return v.b ? 1 : 0;
    case kind::integer:
        return static_cast<double>(v.i);
    case kind::floating:
        return v.f;
    default:
        fail(std::string("expected a number, got ") + type_name(v));
    }
}

bool equal(const value& a, const value& b) {
    if (a.lazy || b.lazy) {
        return a.l == b.l;
    }
    if (a.is_number() && b.is_number()) {
        if (a.k != kind::floating && b.k != kind::floating) {
            return (a.k == kind::boolean ? a.b : a.i) == (b.k == kind::boolean ? b.b : b.i);
        }
        return as_double(a) == as_double(b);
    }
    if (a.k != b.k) {
        return false;
    }
    switch (a.k) {
    case kind::undefined:
    case kind::none:
        return true;
    case kind::string:
        return a.s == b.s;
    case kind::list:
        if (a.l->size() != b.l->size()) {
            return false;
        }
        for (std::size_t n = 0; n < a.l->size(); ++n) {
            if (!equal((*a.l)[n], (*b.l)[n])) {
                return false;
            }
        }
        return true;
    case kind::dict:
        if (a.d->items.size() != b.d->items.size()) {
            return false;
        }
        for (const auto& [key, item] : a.d->items) {
            const value* other = b.d->find(key);
            if (!other || !equal(item, *other)) {
                return false;
            }
        }
        return true;
    case kind::ns:
        return a.d == b.d;
    default:
        return a.fn == b.fn;
    }
}

int compare(const value& a, const value& b) {
    if (a.is_number() && b.is_number()) {
        if (a.k == kind::integer && b.k == kind::integer) {
            return a.i < b.i ? -1 : (a.i > b.i ? 1 : 0);
        }
        const double x = as_double(a);
        const double y = as_double(b);
        return x < y ? -1 : (x > y ? 1 : 0);
    }
    if (a.k == kind::string && b.k == kind::string) {
        const int c = a.s.compare(b.s);
        return c < 0 ? -1 : (c > 0 ? 1 : 0);
    }
    if (a.k == kind::list && b.k == kind::list) {
        const std::size_t n = std::min(a.l->size(), b.l->size());
        for (std::size_t x = 0; x < n; ++x) {
            if (const int c = compare((*a.l)[x], (*b.l)[x]); c != 0) {
                return c;
            }
        }
        return a.l->size() < b.l->size() ? -1 : (a.l->size() > b.l->size() ? 1 : 0);
    }
    fail(std::string("'<' not supported between instances of '") + type_name(a) + "' and '" +
         type_name(b) + "'");
}

std::u32string code_points(std::string_view s) {
    std::u32string out;
    out.reserve(s.size());
    for (std::size_t n = 0; n < s.size();) {
        const auto c = static_cast<unsigned char>(s[n]);
        const int len = c < 0x80         ? 1
                        : (c >> 5) == 6  ? 2
                        : (c >> 4) == 14 ? 3
                        : (c >> 3) == 30 ? 4
                                         : 1;
        char32_t cp = len == 1 ? c : c & (0x3f >> (len - 1));
        for (int x = 1; x < len && n + static_cast<std::size_t>(x) < s.size(); ++x) {
            cp =
                (cp << 6) | (static_cast<unsigned char>(s[n + static_cast<std::size_t>(x)]) & 0x3f);
        }
        out += cp;
        n += static_cast<std::size_t>(len);
    }
    return out;
}

std::string encode(const std::u32string& cps) {
    std::string out;
    out.reserve(cps.size());
    for (const char32_t cp : cps) {
        append_utf8(out, cp);
    }
    return out;
}

std::size_t code_point_count(std::string_view s) {
    std::size_t n = 0;
    for (const char c : s) {
        n += (static_cast<unsigned char>(c) & 0xc0) != 0x80;
    }
    return n;
}

} // namespace lanes::common::jinja_detail