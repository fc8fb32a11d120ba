// One attempt of a request on one replica: take a pooled keep-alive connection (or connect), send
// the request, read the answer's header, relay the answer (whole, or a stream chunk by chunk as it
// arrives), tell the replica's circuit breaker what happened, and give the connection back to the
// pool when it can carry another request. A client that leaves meanwhile closes the upstream
// connection, so that the replica aborts the request and frees its KV blocks at once.
#pragma once

#include "common/http/message.hpp"
#include "common/http/response_writer.hpp"
#include "router/config.hpp"
#include "router/fleet/replica_pool.hpp"
#include "router/metrics.hpp"
#include "router/policies/policy.hpp"

#include <boost/asio/awaitable.hpp>

#include <array>
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

namespace lanes::router {

// The response headers that say where a request went and under which id.
inline constexpr std::string_view header_replica = "x-lanes-replica";
inline constexpr std::string_view header_reason = "x-lanes-route-reason";
inline constexpr std::string_view header_request_id = "x-request-id";

struct attempt_result {
    bool answered = false;    // the client got a complete answer (or a cleanly ended stream)
    bool sent_any = false;    // some bytes reached the client: no retry possible
    bool client_gone = false; // the client went away meanwhile: nobody to retry for
    int status = 0;           // status relayed (or the upstream's failing status)
    std::string failure;      // why the attempt failed
    std::string failed_body;  // upstream's body on a 5xx, relayed if no retry succeeds
    std::string failed_content_type;
};

class upstream_call {
public:
    // `target` is the picked replica, `choice` the decision that picked it; `request_id` and
    // `start` (when the router took the request, for time to first byte) outlive the call.
    upstream_call(const upstream_config& cfg, router_metrics& metrics,
                  std::shared_ptr<replica> target, const decision& choice,
                  std::string_view request_id, std::chrono::steady_clock::time_point start);
    upstream_call(const upstream_call&) = delete;
    upstream_call& operator=(const upstream_call&) = delete;

    boost::asio::awaitable<attempt_result> run(const common::http::request& req,
                                               common::http::response_writer& out);

private:
    struct link; // the attempt's connection, shared with the client-closed hook

    // Sends the request and reads the answer's header, resending once on a fresh connection
    // when a pooled one turns out closed while idle. On a connect failure the link has no
    // connection.
    boost::asio::awaitable<boost::system::error_code> exchange(const common::http::request& req,
                                                               link& l);
    boost::asio::awaitable<void> relay_whole(common::http::response_writer& out, link& l,
                                             const std::string& content_type);
    boost::asio::awaitable<void> relay_stream(common::http::response_writer& out, link& l,
                                              const std::string& content_type);
    void recycle(link& l);
    // Where the request went, for the client: replica, reason, request id.
    std::array<common::http::header_view, 3> route_headers() const;

    const upstream_config& cfg_;
    router_metrics& metrics_;
    std::shared_ptr<replica> target_;
    const decision& choice_;
    const std::string_view request_id_;
    const std::chrono::steady_clock::time_point start_;
    attempt_result result_;
};

// The upstream request's start line and fields in wire format: the client's end-to-end fields in
// order (repeats kept), then Host, the request id and Content-Length; HTTP/1.1 keep-alive.
// `base_path` and `authority` are the replica's (its URL's path prefix, and host:port). With
// `with_body` the request's body follows the blank line, for one write of the whole request.
std::string upstream_head(const common::http::request& req, std::string_view base_path,
                          std::string_view authority, std::string_view request_id,
                          bool with_body = false);

} // namespace lanes::router
