// Which session a request belongs to, for the session policy: the x-session-id header, else the
// body's `user`, else a `session_id` cookie; none when the request names none or names one
// longer than the limit. The key itself is not kept: a session is two hashes of it (policy.hpp,
// session_ref), one keyed with a secret of this process, one the same for every router.
#pragma once

#include "common/http/message.hpp"
#include "router/routing.hpp"

#include <optional>
#include <string>
#include <string_view>

namespace lanes::router {

// The session key as the request gives it (a view into the request or `user`).
std::optional<std::string_view> session_key_text(const common::http::request& req,
                                                 const std::optional<std::string>& user);
// The session of a key.
session_ref session_of(std::string_view key);
// The request's session; none without a key, or with one over `max_key_bytes`.
std::optional<session_ref> request_session(const common::http::request& req,
                                           const std::optional<std::string>& user,
                                           std::size_t max_key_bytes);

} // namespace lanes::router
