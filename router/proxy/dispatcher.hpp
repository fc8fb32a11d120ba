// The retry loop every proxied request goes through: admission, then a replica serving the
// request's model (chooser), one attempt there (upstream_call), and on a failure or a 429/503
// before any byte reached the client, another replica not yet tried, up to --max-retries. When
// no replica took it, the client gets the last replica's answer or one of our own.
#pragma once

#include "common/http/message.hpp"
#include "common/http/response_writer.hpp"
#include "router/access/admission.hpp"
#include "router/proxy/dispatch_plan.hpp"
#include "router/proxy/proxy_config.hpp"
#include "router/proxy/upstream_call.hpp"

#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

namespace lanes::router {

class accounting;
class admission_gate;
class attempt_notice;
class chooser;
class inflight_guard;
class replica;
struct pick_result;
class response_affinity;
class router_metrics;

// Why the last pick found no replica: the longest backoff in the way, and the causes in words.
struct no_choice {
    std::chrono::milliseconds backoff_left{0};
    std::string why;
};

class dispatcher {
public:
    // Reads every replica's model list again (the monitor's refresh_models); may be empty.
    using models_refresher = std::function<boost::asio::awaitable<void>()>;

    dispatcher(const proxy_config& cfg, router_metrics& metrics, chooser& choose,
               admission_gate& gate, accounting& counts, response_affinity& responses,
               models_refresher refresh_models);

    // Runs `plan` to its answer; it keeps the plan (its route_request's model and blocks are
    // pointed at the plan's own fields when it starts).
    boost::asio::awaitable<void> dispatch(common::http::request& req,
                                          common::http::response_writer& out, dispatch_plan plan);

private:
    // Sets one attempt's hooks (not a coroutine: dispatch's frame holds the attempt): the
    // policy hears when the answer began, a response's id is remembered, and the replica's
    // place (`held`) and admission's room (`ticket`) are let go as soon as the replica's answer
    // is read, while the client may still be taking it.
    void wire(upstream_call& call, attempt_notice& done, const pick_result& p, inflight_guard& held,
              admission::ticket& ticket);
    // Logs a failed attempt and notes it on the replica; whether --retry-on retries it.
    bool note_failure(replica& r, const attempt_result& last, const std::string& request_id,
                      std::int64_t attempt);
    // dispatch's two answers of its own, each a coroutine apart: GCC keeps every local of a
    // coroutine in its heap frame for the coroutine's whole life, and dispatch's frame lives as
    // long as the request does (a stream's, minutes). The 404 of a model no replica serves:
    boost::asio::awaitable<void> reject_unknown_model(common::http::request& req,
                                                      common::http::response_writer& out,
                                                      const dispatch_plan& plan);
    // ... and the answer when no replica took the request: the last upstream error, or ours.
    boost::asio::awaitable<void>
    answer_unrouted(common::http::request& req, common::http::response_writer& out,
                    const dispatch_plan& plan, const attempt_result& last, bool tried_any,
                    const no_choice& nothing, std::chrono::seconds retry_after,
                    const std::string& request_id);
    common::http::response failure_response(const common::http::request& req,
                                            const attempt_result& last, bool tried_any,
                                            const no_choice& nothing,
                                            common::http::response_writer& out);
    // A 429 or 503: the replica takes no request for its Retry-After, else the default backoff,
    // capped; returns that wait in whole seconds.
    std::chrono::seconds hold_off(replica& r, const attempt_result& last);

    const proxy_config& cfg_;
    router_metrics& metrics_;
    chooser& choose_;
    admission_gate& gate_;
    accounting& counts_;
    response_affinity& responses_;
    models_refresher refresh_models_;
};

} // namespace lanes::router
