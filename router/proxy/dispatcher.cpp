#include "router/proxy/dispatcher.hpp"

#include "common/log.hpp"
#include "common/openai/error.hpp"
#include "common/openai/response.hpp"
#include "router/metrics.hpp"
#include "router/proxy/accounting.hpp"
#include "router/proxy/admission_gate.hpp"
#include "router/proxy/attempt_notice.hpp"
#include "router/proxy/chooser.hpp"
#include "router/proxy/response_affinity.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>

namespace lanes::router {

namespace asio = boost::asio;
namespace http = common::http;
namespace openai = common::openai;
namespace bhttp = boost::beast::http;
using clock_type = std::chrono::steady_clock;

dispatcher::dispatcher(const proxy_config& cfg, router_metrics& metrics, chooser& choose,
                       admission_gate& gate, accounting& counts, response_affinity& responses,
                       models_refresher refresh_models)
    : cfg_(cfg)
    , metrics_(metrics)
    , choose_(choose)
    , gate_(gate)
    , counts_(counts)
    , responses_(responses)
    , refresh_models_(std::move(refresh_models)) {}

asio::awaitable<void> dispatcher::dispatch(http::request& req, http::response_writer& out,
                                           dispatch_plan plan) {
    // The request's views of the plan's own fields, made here where the plan now lives.
    plan.rr.model = plan.model;
    plan.rr.blocks = plan.blocks;
    std::string request_id;
    if (auto id = req.find(header_request_id); id && !id->empty())
        request_id = std::string(*id);
    else
        request_id = openai::make_id("req-");

    admission::ticket ticket;
    if (!co_await gate_.admit(req, out, plan, ticket))
        co_return;
    tried_set tried;
    attempt_result last;
    bool refreshed = false;
    no_choice nothing;
    std::chrono::seconds largest_retry_after{0};
    for (std::int64_t attempt = 0; attempt <= cfg_.max_retries;) {
        const auto decide_start = clock_type::now();
        pick_result p = choose_.pick(plan, tried, decide_start);
        metrics_.decision.observe(seconds_since(decide_start));
        if (p.unknown_model && !refreshed && refresh_models_) {
            refreshed = true; // a model may have come up since the last read: read once more
            co_await refresh_models_();
            continue;
        }
        if (p.unknown_model) {
            co_await reject_unknown_model(req, out, plan);
            co_return;
        }
        if (!p.d.replica) {
            nothing = {p.backoff_left, std::move(p.unroutable)};
            break;
        }
        inflight_guard held(p.chosen); // releases the count pick() raised
        ticket.routed();
        if (attempt > 0)
            metrics_.retries.inc();
        counts_.note_routed(plan.rr, p.d, plan.block_tokens);
        {
            attempt_notice done(choose_, p, plan.rr);
            upstream_call call(cfg_.upstream, metrics_, p.chosen, p.d, request_id, plan.start,
                               plan.capture_response_id);
            wire(call, done, p, held, ticket);
            last = co_await call.run(req, out);
            // The replica took it when it answered below 400 (a stream it began counts).
            done.taken(last.status > 0 && last.status < 400);
        }
        if (last.client_gone || last.answered || last.sent_any) {
            // Done here: answered, or a client that left (no retry: closing the upstream
            // request was the point), or a stream that broke after its first byte.
            counts_.account(req, plan, p.chosen->id(), p.d, last, request_id, attempt + 1,
                            std::move(p.weighed));
            out.mark_logged();
            co_return;
        }
        if (last.backpressure)
            largest_retry_after = std::max(largest_retry_after, hold_off(*p.chosen, last));
        const bool again = note_failure(*p.chosen, last, request_id, attempt);
        tried.push_back(p.chosen->id()); // a retry goes elsewhere
        if (!again)
            break; // it may have run (or still run) there: not run again elsewhere
        ++attempt;
    }
    // Nothing reached the client.
    co_await answer_unrouted(req, out, plan, last, !tried.empty(), nothing, largest_retry_after,
                             request_id);
}

void dispatcher::wire(upstream_call& call, attempt_notice& done, const pick_result& p,
                      inflight_guard& held, admission::ticket& ticket) {
    call.on_first_byte([&done] { done.first_byte(); });
    call.on_response_id(
        [this, &p](std::string_view id) { responses_.remember(id, p.chosen->id()); });
    // Once the replica's answer is read, its place is free (in flight, the policy's load,
    // admission's room) while the client takes the rest at its own pace.
    call.on_replica_done([&done, &held, &ticket](int status) {
        done.taken(status < 400);
        done.finish();
        held.release();
        ticket = admission::ticket{}; // the next waiter may have this room
    });
}

bool dispatcher::note_failure(replica& r, const attempt_result& last, const std::string& request_id,
                              std::int64_t attempt) {
    const bool again = cfg_.retry.allows(last.failed);
    r.note_error("a request failed: " + last.failure);
    LANES_LOG(warn, "proxy",
              request_id << " attempt " << attempt + 1 << " on " << r.id() << " failed: "
                         << last.failure << (again ? "" : " (not retried: --retry-on)"));
    return again;
}

asio::awaitable<void> dispatcher::reject_unknown_model(http::request& req,
                                                       http::response_writer& out,
                                                       const dispatch_plan& plan) {
    metrics_.requests.with({"none", "404", "unknown_model", "unknown"}).inc();
    counts_.count_for_key(plan.who, 404);
    out.note_refusal("unknown_model");
    co_await out.send(openai::error_response(req, openai::api_error::model_not_found(plan.model)));
}

asio::awaitable<void> dispatcher::answer_unrouted(http::request& req, http::response_writer& out,
                                                  const dispatch_plan& plan,
                                                  const attempt_result& last, bool tried_any,
                                                  const no_choice& nothing,
                                                  std::chrono::seconds retry_after,
                                                  const std::string& request_id) {
    http::response res = failure_response(req, last, tried_any, nothing, out);
    if (last.backpressure && retry_after.count() > 0)
        res.set(bhttp::field::retry_after, std::to_string(retry_after.count()));
    res.set(header_request_id, request_id);
    metrics_.requests.with({"none", std::to_string(res.result_int()), "failed", plan.model_label})
        .inc();
    counts_.count_for_key(plan.who, res.result_int());
    metrics_.duration.observe(seconds_since(plan.start));
    co_await out.send(std::move(res));
}

std::chrono::seconds dispatcher::hold_off(replica& r, const attempt_result& last) {
    // Load, not failure: the replica takes no request until its backoff is over.
    const auto asked =
        last.retry_after ? std::chrono::milliseconds(*last.retry_after) : cfg_.backpressure_backoff;
    const auto wait = std::clamp(asked, std::chrono::milliseconds(1), cfg_.max_backoff);
    r.traffic.backoff_until.store((clock_type::now() + wait).time_since_epoch().count());
    metrics_.backpressure.with({r.id()}).inc();
    return std::chrono::ceil<std::chrono::seconds>(wait);
}

http::response dispatcher::failure_response(const http::request& req, const attempt_result& last,
                                            bool tried_any, const no_choice& nothing,
                                            http::response_writer& out) {
    if (!last.failed_body.empty() || last.backpressure) {
        out.note_refusal(last.backpressure ? "backpressure" : "upstream_status");
        metrics_.errors.with({last.backpressure ? "backpressure" : "upstream_status"}).inc();
        auto res = http::make_response(req, static_cast<bhttp::status>(last.status),
                                       last.failed_body, last.failed_content_type);
        for (const auto& [name, value] : last.failed_headers)
            res.insert(name, value);
        return res;
    }
    if (!tried_any) {
        out.note_refusal("no_replica");
        metrics_.errors.with({"no_replica"}).inc();
        const bool backing_off = nothing.backoff_left.count() > 0;
        const std::string why =
            nothing.why.empty() ? "no replica can take the request now" : nothing.why;
        auto res = openai::error_response(req, openai::api_error::of(503, why + "; retry later"));
        http::set_retry_after(res, backing_off ? nothing.backoff_left : cfg_.retry_after);
        return res;
    }
    if (last.failed == failure_class::timeout) {
        out.note_refusal("upstream_timeout");
        metrics_.errors.with({"upstream_timeout"}).inc();
        return openai::error_response(
            req, openai::api_error::of(504, "the replica did not answer within "
                                            "--first-byte-timeout"));
    }
    out.note_refusal("upstream_failed");
    metrics_.errors.with({"upstream_failed"}).inc();
    const std::string what = cfg_.retry.allows(last.failed)
                                 ? "every replica tried failed: "
                                 : "the replica failed (not retried, see --retry-on): ";
    return openai::error_response(req, openai::api_error::of(502, what + last.failure));
}

} // namespace lanes::router
