// Which fields cross the proxy: a client's request fields forwarded to a replica (end to end
// only, the router's own Host, Content-Length and request id instead) and a replica's answer
// fields relayed back (no hop-by-hop or framing fields), as RFC 9110 7.6.1 has it.
#pragma once

#include "common/http/parse.hpp"

#include <string_view>

namespace lanes::router {

// Whether the answer's field `name` goes back to the client; `names_fields` is whether the
// answer's Connection field names any (head.connection_names_fields()).
bool relayed_field(const common::http::response_head& head, std::string_view name,
                   bool names_fields);

} // namespace lanes::router
