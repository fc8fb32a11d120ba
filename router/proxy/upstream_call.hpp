// One attempt of a request on one replica: take a pooled keep-alive connection (or connect), send
// the request, read the answer's header, relay the answer (whole, or a stream chunk by chunk as it
// arrives), tell the replica's circuit breaker what happened, and give the connection back to the
// pool when it can carry another request. A client that leaves meanwhile closes the upstream
// connection, so that the replica aborts the request and frees its KV blocks at once.
#pragma once

#include "common/http/message.hpp"
#include "common/http/parse.hpp"
#include "common/http/response_writer.hpp"
#include "router/fleet/replica_pool.hpp"
#include "router/fleet/upstream_config.hpp"
#include "router/metrics.hpp"
#include "router/policies/policy.hpp"
#include "router/proxy/retry_policy.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/container/small_vector.hpp>

#include <array>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

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
    failure_class failed = failure_class::none; // which kind of failure (whether to retry)
    // The replica pushed back (429, 503): load, not failure; try another, and this one only
    // after its Retry-After.
    bool backpressure = false;
    std::optional<std::chrono::seconds> retry_after;
    // Upstream's answer on a 5xx or backpressure, relayed if no other replica answers.
    std::string failed_body;
    std::string failed_content_type;
    common::http::header_list failed_headers;
    std::string response_id; // a /v1/responses answer's id, when the call was asked to find it
};

class upstream_call {
public:
    // `target` is the picked replica, `choice` the decision that picked it; `request_id` and
    // `start` (when the router took the request, for time to first byte) outlive the call.
    // With `capture_response_id` the answer's response id (a /v1/responses answer's) is looked
    // for, in the body or the stream's first events.
    upstream_call(const upstream_config& cfg, router_metrics& metrics,
                  std::shared_ptr<replica> target, const decision& choice,
                  std::string_view request_id, std::chrono::steady_clock::time_point start,
                  bool capture_response_id = false);
    upstream_call(const upstream_call&) = delete;
    upstream_call& operator=(const upstream_call&) = delete;

    boost::asio::awaitable<attempt_result> run(const common::http::request& req,
                                               common::http::response_writer& out);
    // Runs once when the replica's answer begins (a stream's first piece, or a whole answer
    // read): the request's prefill is over there.
    void on_first_byte(std::function<void()> f) { first_byte_hook_ = std::move(f); }
    // Runs once when the replica's part of a good answer is over (a whole answer read, a stream's
    // end read), before what is left is written to the client: the replica is free from then
    // on, however slowly the client reads. Given the answer's status; not run for an answer
    // that is not relayed (a failure, a 5xx kept for a retry).
    void on_replica_done(std::function<void(int status)> f) { replica_done_hook_ = std::move(f); }
    // Runs once when the response id is found, before the client is sent the answer that
    // carries it: a continuation the client sends as soon as it reads the id finds it known.
    void on_response_id(std::function<void(std::string_view)> f) {
        response_id_hook_ = std::move(f);
    }

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
    // A stream that broke after its first byte: an error event and [DONE] end it (a coroutine
    // apart, so that relay_stream's frame, alive for the whole stream, does not hold them).
    boost::asio::awaitable<void> end_broken_stream(common::http::response_writer& out,
                                                   boost::system::error_code ec, bool at_event_end);
    void recycle(link& l);
    // Where the request went, for the client: replica, reason, request id.
    std::array<common::http::header_view, 3> route_headers() const;
    // The upstream answer's end-to-end fields (copied: the connection may go back to the pool
    // before the answer is sent), then the route headers.
    void keep_relayed_headers(const common::http::response_head& head);
    using header_views = boost::container::small_vector<common::http::header_view, 8>;
    header_views answer_headers() const;
    common::http::header_list relayed_list() const;
    // The Authorization to send instead of the client's (empty: the client's, if any, as it is).
    std::string_view authorization(const common::http::request& req) const;

    const upstream_config& cfg_;
    router_metrics& metrics_;
    std::shared_ptr<replica> target_;
    const decision& choice_;
    const std::string_view request_id_;
    const std::chrono::steady_clock::time_point start_;
    const bool capture_response_id_;
    std::function<void()> first_byte_hook_;
    void first_byte(); // the metric, and the hook once
    std::function<void(std::string_view)> response_id_hook_;
    std::function<void(int status)> replica_done_hook_;
    void replica_done();                              // the hook, once
    void look_for_response_id(std::string_view text); // sets result_.response_id, runs the hook
    attempt_result result_;
    // The relayed fields' names and values back to back in one string, and where each lies.
    struct field_at {
        std::uint32_t name_at, name_size, value_at, value_size;
    };
    std::string relayed_text_;
    boost::container::small_vector<field_at, 4> relayed_;
};

// A Retry-After value (delay-seconds or an HTTP-date) as a delay from `now`.
std::optional<std::chrono::seconds>
parse_retry_after(std::string_view value,
                  std::chrono::system_clock::time_point now = std::chrono::system_clock::now());

// The id of a responses answer in (the first part of) its body or stream; "" when none is there.
std::string find_response_id(std::string_view text);

// The upstream request's start line and fields in wire format: the client's end-to-end fields in
// order (repeats kept), then Host, the request id and Content-Length; HTTP/1.1 keep-alive.
// `base_path` and `authority` are the replica's (its URL's path prefix, and host:port). With
// `with_body` the request's body follows the blank line, for one write of the whole request.
// `authorization`, when given, is sent instead of the client's Authorization.
std::string upstream_head(const common::http::request& req, std::string_view base_path,
                          std::string_view authority, std::string_view request_id,
                          bool with_body = false, std::string_view authorization = {});

} // namespace lanes::router
