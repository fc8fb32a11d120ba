#include "router/access/request_cost.hpp"

#include <simdjson.h>

#include <algorithm>
#include <string>

namespace lanes::router {

namespace od = simdjson::ondemand;

std::uint64_t requested_output_tokens(std::string_view body) {
    thread_local od::parser parser;
    const simdjson::padded_string padded(body);
    od::document doc;
    if (parser.iterate(padded).get(doc))
        return 0;
    od::object obj;
    if (doc.get_object().get(obj))
        return 0;
    std::uint64_t most = 0;
    for (auto field : obj) {
        std::string_view key;
        if (field.unescaped_key().get(key))
            return most;
        if (key != "max_tokens" && key != "max_completion_tokens" && key != "max_output_tokens")
            continue;
        std::uint64_t n = 0;
        if (!field.value().get_uint64().get(n))
            most = std::max(most, n);
    }
    return most;
}

} // namespace lanes::router
