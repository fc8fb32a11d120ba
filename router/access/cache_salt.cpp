#include "router/access/cache_salt.hpp"

#include "common/access/secret.hpp"
#include "router/request/body_reading.hpp"

#include <simdjson.h>

namespace lanes::router {

namespace od = simdjson::ondemand;

std::string cache_salt_for(std::string_view key_name) {
    return "lanes-" + common::access::hex(
                          common::access::sha256("lanes cache salt " + std::string(key_name)), 12);
}

bool has_field(std::string_view body, std::string_view name) {
    body_reading reading(body);
    od::document doc;
    od::object obj;
    if (reading.iterate().get(doc) || doc.get_object().get(obj))
        return false;
    for (auto field : obj) {
        std::string_view key;
        if (field.unescaped_key().get(key))
            return false;
        if (key == name)
            return true;
    }
    return false;
}

std::string with_cache_salt(std::string_view body, std::string_view salt) {
    const auto open = body.find('{');
    if (open == std::string_view::npos)
        return std::string(body);
    std::size_t next = open + 1;
    while (next < body.size() &&
           (body[next] == ' ' || body[next] == '\t' || body[next] == '\n' || body[next] == '\r'))
        ++next;
    const bool empty = next < body.size() && body[next] == '}';
    // The salt is hex and a fixed prefix: nothing in it needs escaping.
    std::string out;
    out.reserve(body.size() + salt.size() + 20);
    out.append(body.substr(0, open + 1));
    out.append("\"cache_salt\":\"").append(salt).append(empty ? "\"" : "\",");
    out.append(body.substr(open + 1));
    return out;
}

} // namespace lanes::router
