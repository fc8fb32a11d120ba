// What the proxy's two halves share (router/proxy.cpp: parse, route, retry; router/upstream.cpp:
// send to a replica and relay its answer). Private to those two files.
#pragma once

#include "common/http/client.hpp"
#include "common/openai/request.hpp"
#include "router/proxy.hpp"

#include <chrono>
#include <memory>
#include <string>
#include <string_view>

namespace lanes::router {

namespace proxy_detail {

using clock_type = std::chrono::steady_clock;

inline constexpr std::string_view header_replica = "x-lanes-replica";
inline constexpr std::string_view header_reason = "x-lanes-route-reason";
inline constexpr std::string_view header_request_id = "x-request-id";

inline double seconds_since(clock_type::time_point t) {
    return std::chrono::duration<double>(clock_type::now() - t).count();
}

inline common::openai::api_error make_error(int status, std::string type, std::string message) {
    common::openai::api_error e;
    e.status = status;
    e.type = std::move(type);
    e.message = std::move(message);
    return e;
}

// The upstream request's start line and fields in wire format: the client's end-to-end fields in
// order (repeats kept), then Host, the request id and Content-Length; HTTP/1.1 keep-alive.
// `base_path` and `authority` are the replica's (its URL's path prefix, and host:port). With
// `with_body` the request's body follows the blank line, for one write of the whole request.
std::string upstream_head(const common::http::request& req, std::string_view base_path,
                          std::string_view authority, std::string_view request_id,
                          bool with_body = false);

} // namespace proxy_detail

struct proxy::routed {
    std::shared_ptr<replica> target;
    decision choice;
    std::string_view request_id; // generate()'s, which outlives every attempt
    proxy_detail::clock_type::time_point start;
};

struct proxy::attempt_result {
    bool answered = false;    // the client got a complete answer (or a cleanly ended stream)
    bool sent_any = false;    // some bytes reached the client: no retry possible
    bool client_gone = false; // the client went away meanwhile: nobody to retry for
    int status = 0;           // status relayed (or the upstream's failing status)
    std::string failure;      // why the attempt failed
    std::string failed_body;  // upstream's body on a 5xx, relayed if no retry succeeds
    std::string failed_content_type;
};

// The upstream connection of one attempt, shared with the client-closed hook: if the client goes
// away while we wait, closing the upstream connection makes the replica abort the request (and
// free its KV blocks) at once. Once the connection is pooled the hook no longer sees it.
struct proxy::upstream_link {
    std::unique_ptr<common::http::client_connection> conn;
    bool client_gone = false;
};

} // namespace lanes::router
