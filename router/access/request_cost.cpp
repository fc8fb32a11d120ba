#include "router/access/request_cost.hpp"

#include "router/request/body_reading.hpp"

#include <simdjson.h>

#include <algorithm>
#include <string>

namespace lanes::router {

namespace od = simdjson::ondemand;

namespace {

// Calls f(key, value) for each top-level field of a JSON object body (nothing for any other).
template <typename F>
void each_field(std::string_view body, F&& f) {
    body_reading reading(body);
    od::document doc;
    if (reading.iterate().get(doc))
        return;
    od::object obj;
    if (doc.get_object().get(obj))
        return;
    for (auto field : obj) {
        std::string_view key;
        if (field.unescaped_key().get(key))
            return;
        od::value v;
        if (field.value().get(v))
            return;
        f(key, v);
    }
}

} // namespace

std::uint64_t requested_output_tokens(std::string_view body) {
    std::uint64_t most = 0;
    each_field(body, [&](std::string_view key, od::value& v) {
        std::uint64_t n = 0;
        if ((key == "max_tokens" || key == "max_completion_tokens" || key == "max_output_tokens") &&
            !v.get_uint64().get(n))
            most = std::max(most, n);
    });
    return most;
}

std::optional<std::int64_t> requested_priority(std::string_view body) {
    std::optional<std::int64_t> last;
    each_field(body, [&](std::string_view key, od::value& v) {
        std::int64_t n = 0;
        if (key == "priority")
            last = v.get_int64().get(n) ? std::nullopt : std::optional<std::int64_t>(n);
    });
    return last;
}

} // namespace lanes::router
