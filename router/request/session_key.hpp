// Which session a request belongs to, for the session policy: the x-session-id header, else the
// body's `user`, else a `session_id` cookie; none when the request names none.
#pragma once

#include "common/http/message.hpp"

#include <optional>
#include <string>

namespace lanes::router {

std::optional<std::string> session_key(const common::http::request& req,
                                       const std::optional<std::string>& user);

} // namespace lanes::router
