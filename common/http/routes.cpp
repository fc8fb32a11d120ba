#include "common/http/routes.hpp"

namespace lanes::common::http {

bool allows(unsigned methods, beast_http::verb verb) {
    switch (verb) {
    case beast_http::verb::get:
    case beast_http::verb::head:
        return (methods & method_get) != 0;
    case beast_http::verb::post:
        return (methods & method_post) != 0;
    case beast_http::verb::delete_:
        return (methods & method_delete) != 0;
    default:
        return false;
    }
}

std::string allow_value(unsigned methods) {
    std::string out;
    const auto add = [&out](std::string_view name) {
        out += out.empty() ? "" : ", ";
        out += name;
    };
    if (methods & method_get) {
        add("GET");
        add("HEAD");
    }
    if (methods & method_post)
        add("POST");
    if (methods & method_delete)
        add("DELETE");
    return out;
}

std::string_view path_of(std::string_view target) {
    return target.substr(0, target.find('?'));
}

} // namespace lanes::common::http
