#include "router/request/json_values.hpp"

namespace lanes::router::json_values {

namespace od = simdjson::ondemand;

bool escaped_name(od::field& f) {
    const char* p = f.key().raw();
    for (; *p != '"'; ++p)
        if (*p == '\\')
            return true;
    return false;
}

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

std::optional<std::string> string_of(od::value& v) {
    std::string_view s;
    if (!is_type(v, od::json_type::string) || v.get_string().get(s))
        return std::nullopt;
    return std::string(s);
}

simdjson::error_code raw_text(od::value& v, std::string_view& out) {
    od::json_type t;
    if (auto e = v.type().get(t))
        return e;
    if (t == od::json_type::object) {
        od::object o;
        if (auto e = v.get_object().get(o))
            return e;
        return o.raw_json().get(out);
    }
    if (t == od::json_type::array) {
        od::array a;
        if (auto e = v.get_array().get(a))
            return e;
        return a.raw_json().get(out);
    }
    out = v.raw_json_token();
    return simdjson::SUCCESS;
}

simdjson::error_code read_ids(od::array a, std::vector<std::uint32_t>& ids) {
    bool all = true;
    for (auto item : a) {
        od::value v;
        if (auto e = item.get(v))
            return e;
        std::uint64_t id = 0;
        if (!all || !is_type(v, od::json_type::number) || v.get_uint64().get(id) ||
            id > UINT32_MAX) {
            all = false;
            continue;
        }
        ids.push_back(static_cast<std::uint32_t>(id));
    }
    if (!all)
        ids.clear();
    return simdjson::SUCCESS;
}

} // namespace lanes::router::json_values
