// Route tables of the servers: each route is a path, the methods it takes and what serves it.
// A path asked with a method it does not take is answered 405 with Allow; an unknown one 404.
#pragma once

#include "common/http/message.hpp"

#include <string>
#include <string_view>

namespace lanes::common::http {

// Methods, as bits; GET stands for HEAD too (answered as GET, without the body).
enum method_bits : unsigned { method_get = 1, method_post = 2, method_delete = 4 };

bool allows(unsigned methods, beast_http::verb verb);
// The Allow field's value: "GET, HEAD", "POST", ...
std::string allow_value(unsigned methods);
// A request target's path: everything before the query.
std::string_view path_of(std::string_view target);

template <class Route>
struct route_match {
    const Route* route = nullptr; // the route that takes the path and the method
    unsigned path_methods = 0;    // every method the path's routes take (0: an unknown path)
};

// Looks `path` and `verb` up in a table of routes (each with `path` and `methods` members).
template <class Table>
auto match_route(const Table& table, std::string_view path, beast_http::verb verb) {
    route_match<typename Table::value_type> m;
    for (const auto& r : table) {
        if (r.path != path)
            continue;
        m.path_methods |= r.methods;
        if (!m.route && allows(r.methods, verb))
            m.route = &r;
    }
    return m;
}

} // namespace lanes::common::http
