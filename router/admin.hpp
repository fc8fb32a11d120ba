// The admin API. With --admin-token set, every call needs "Authorization: Bearer <token>";
// without one, only loopback clients are served.
//   GET    /admin/replicas                 the replicas and their state (JSON array)
//   POST   /admin/replicas        {"url"}  add a replica
//   DELETE /admin/replicas?url=U           remove a replica (in-flight requests finish)
//   POST   /admin/replicas/drain  {"url"}  stop routing new work to it; in-flight requests finish
//   POST   /admin/replicas/undrain {"url"} route to it again
// SGLang router compatibility: POST /add_worker?url=U, POST /remove_worker?url=U, GET
// /list_workers.
#pragma once

#include "common/http/message.hpp"
#include "common/http/response_writer.hpp"
#include "common/http/url.hpp"
#include "router/fleet/replica_pool.hpp"

#include <boost/asio/awaitable.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace lanes::router {

class admin {
public:
    admin(std::string token, replica_pool& pool)
        : token_(std::move(token))
        , pool_(pool) {}

    static bool handles(std::string_view path);
    boost::asio::awaitable<void> handle(common::http::request& req,
                                        common::http::response_writer& out);

    // The answer to one admin request; `loopback` says whether the client is local.
    common::http::response respond(const common::http::request& req, bool loopback);

private:
    common::http::response list(const common::http::request& req);
    common::http::response list_urls(const common::http::request& req);
    common::http::response add(const common::http::request& req);
    common::http::response remove(const common::http::request& req);
    common::http::response drain(const common::http::request& req);
    common::http::response undrain(const common::http::request& req);
    common::http::response set_draining(const common::http::request& req, bool draining);
    // The replica a mutation names (?url= or {"url": ...}); nullopt with `refusal` set to the
    // 400 when it names none or a bad one.
    std::optional<common::http::url> replica_argument(const common::http::request& req,
                                                      common::http::response& refusal);
    // The replica a call names; nullptr with `refusal` set (400 or 404) when there is none.
    std::shared_ptr<replica> replica_named(const common::http::request& req,
                                           common::http::response& refusal);

    std::string token_;
    replica_pool& pool_;
};

// The state of every replica as /admin/replicas shows it.
std::string replicas_json(replica_pool& pool);

} // namespace lanes::router
