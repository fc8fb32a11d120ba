// The admin API, served on its own listener (--admin-host/--admin-port, loopback by default) and
// never on the traffic port.
//   GET    /admin/replicas                 the replicas and their state (JSON array)
//   POST   /admin/replicas        {"url"}  add a replica
//   DELETE /admin/replicas?url=U           remove a replica (in-flight requests finish)
//   POST   /admin/replicas/drain  {"url"}  stop routing new work to it; in-flight requests finish
//   POST   /admin/replicas/undrain {"url"} route to it again
// SGLang router compatibility: POST /add_worker?url=U, POST /remove_worker?url=U, GET
// /list_workers.
// Who may call it: with a token (--admin-token, --admin-token-file), every call needs
// "Authorization: Bearer <token>", compared in constant time. Without one, loopback clients may
// read, and change the fleet only with --admin-insecure-loopback and a JSON Content-Type (a
// cross-site form POST cannot send one without a preflight).
// Every request on the admin listener is first screened (screen()): its Host must be an IP
// literal, localhost or an --admin-server-name (else 421: a rebound DNS name is same-origin with
// the port, so the browser's own checks do not help); a browser request from another site
// (Origin not this Host, Sec-Fetch-Site other than same-origin or none) is a 403; off loopback,
// everything but the probes and the page itself needs the token (or is a 403 without one).
#pragma once

#include "common/access/secret.hpp"
#include "common/http/message.hpp"
#include "common/http/response_writer.hpp"
#include "common/http/url.hpp"
#include "router/fleet/replica_pool.hpp"

#include <boost/asio/awaitable.hpp>
#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::router {

class admin {
public:
    struct access {
        std::optional<common::access::digest> token; // of the admin token, when there is one
        bool insecure_loopback = false;
        std::vector<std::string> server_names; // --admin-server-name
    };
    admin(access who, replica_pool& pool)
        : access_(std::move(who))
        , pool_(pool) {}

    static bool handles(std::string_view path);
    boost::asio::awaitable<void> handle(common::http::request& req,
                                        common::http::response_writer& out);

    // The answer to one admin request; `loopback` says whether the client is local.
    common::http::response respond(const common::http::request& req, bool loopback);
    // The admin listener's screen of any request, before its route: nullopt when it may go on,
    // else the refusal (421, 403 or 401).
    std::optional<common::http::response> screen(const common::http::request& req,
                                                 bool loopback) const;

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

    // With a token configured: nullopt when `req` carries it, else the 401.
    std::optional<common::http::response> token_refusal(const common::http::request& req) const;
    // nullopt when `req` may be served, else the refusal (401, 403 or 415).
    std::optional<common::http::response> refusal(const common::http::request& req,
                                                  bool loopback) const;

    access access_;
    replica_pool& pool_;
};

// One replica's state as /admin/replicas shows it (the live page adds to it).
nlohmann::json replica_state(replica& r);
// The state of every replica as /admin/replicas shows it.
std::string replicas_json(replica_pool& pool);

} // namespace lanes::router
