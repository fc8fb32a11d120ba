// The dispatch loop: pick a replica serving the request's model, run one attempt there, and on
// a failure or a 429/503 before any byte reached the client try one not yet tried; the metrics
// and the access log line of what came of it.
#include "router/proxy.hpp"

#include "common/log.hpp"
#include "common/openai/response.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <charconv>
#include <chrono>

namespace lanes::router {

namespace asio = boost::asio;
namespace http = common::http;
namespace openai = common::openai;
namespace bhttp = boost::beast::http;
using clock_type = std::chrono::steady_clock;

struct proxy::pick_result {
    decision d;
    std::shared_ptr<replica> chosen;
    policy* chooser = nullptr; // the policy that picked (or recorded the pinned choice)
    std::size_t recorded = 0;  // what it noted in on_routed, for on_outcome
    bool unknown_model = false;
    std::chrono::milliseconds backoff_left{0}; // with no pick: the longest backoff in the way
};

void proxy::refresh_snapshot(clock_type::time_point now) {
    if (snapshot_.refresh(now, cfg_.stale_after)) {
        policy_->on_replicas_changed(snapshot_.view());
        forward_policy_->on_replicas_changed(snapshot_.view());
    }
}

proxy::pick_result proxy::pick(dispatch_plan& plan, const tried_set& tried,
                               clock_type::time_point now) {
    pick_result out;
    std::lock_guard lock(policy_mutex_);
    refresh_snapshot(now);
    const pool_snapshot& snap = snapshot_.view();
    if (!plan.ideal_counted && plan.by_policy) {
        plan.ideal_counted = true;
        std::size_t capacity = 0; // the fleet's blocks, those of replicas that said
        for (const auto& r : snap.replicas)
            capacity +=
                static_cast<std::size_t>(std::max<std::int64_t>(r.num_blocks.value_or(0), 0));
        const std::size_t hit = ideal_.hit_blocks(plan.blocks, capacity);
        // The cap note_routed puts on the prediction: the prompt's last token is always computed.
        const std::size_t cap = plan.rr.prompt_tokens > 0 && plan.block_tokens > 0
                                    ? (plan.rr.prompt_tokens - 1) / plan.block_tokens
                                    : 0;
        metrics_.ideal_hit_tokens.inc(static_cast<double>(std::min(hit, cap) * plan.block_tokens));
    }
    // Which replicas serve the model; none that does (all lists known) makes it unknown.
    const auto serving = snapshot_.serving(plan.model, serves_);
    if (serving == snapshot_cache::model_serving::none) {
        out.unknown_model = true;
        return out;
    }
    plan.rr.serves = serving == snapshot_cache::model_serving::some ? std::span<const char>(serves_)
                                                                    : std::span<const char>();
    // A replica at its cap takes no new request (admission holds them back meanwhile).
    const tried_set full = full_replicas();
    if (plan.pinned) {
        for (std::size_t i = 0; i < snap.replicas.size(); ++i)
            if (snap.replicas[i].id == *plan.pinned && eligible(snap, i, plan.rr, tried, full))
                out.d = {i, route_reason::response_affinity, 0};
    }
    policy& chooser = plan.by_policy ? *policy_ : *forward_policy_;
    if (!out.d.replica)
        out.d = chooser.pick(plan.rr, snap, tried, full);
    if (!out.d.replica) {
        // Nothing routable: how long until a replica of the model that is backing off takes
        // requests again (the client's Retry-After then).
        out.backoff_left = snapshot_.longest_backoff(plan.rr.serves, now);
        return out;
    }
    out.chosen = snapshot_.replica_at(*out.d.replica);
    // Counted in flight under the same lock as the choice, so the next pick sees it: a
    // half-open replica's single trial, and least-loaded choices made at the same moment on
    // other threads, depend on it. The caller releases it with an inflight_guard.
    out.chosen->inflight.fetch_add(1);
    out.chooser = &chooser;
    out.recorded = chooser.on_routed(plan.rr, out.chosen->id());
    return out;
}

// Tells the policy an attempt ended when it goes out of scope, however the attempt ended: by its
// answer, a failure, an exception, or the coroutine's frame being destroyed at shutdown. Unless
// taken() said the replica took the request, what the policy recorded as pending is dropped.
class proxy::done_notice {
public:
    done_notice(proxy& p, const pick_result& pick, const route_request& rr)
        : p_(p)
        , pick_(pick)
        , rr_(rr) {}
    ~done_notice() { finish(); }
    done_notice(const done_notice&) = delete;
    done_notice& operator=(const done_notice&) = delete;
    void taken(bool yes) { taken_ = yes; }
    // The policy hears the end now (the replica is done before the client is); once.
    void finish() {
        if (finished_)
            return;
        finished_ = true;
        std::lock_guard lock(p_.policy_mutex_);
        if (!first_byte_)
            pick_.chooser->on_first_byte(rr_, pick_.chosen->id(), pick_.recorded);
        first_byte_ = true;
        pick_.chooser->on_outcome(rr_, pick_.chosen->id(), pick_.recorded, taken_);
        pick_.chooser->on_request_done(pick_.chosen->id());
    }
    // The replica's answer began: the policy hears it now (else at the end, from the destructor).
    void first_byte() {
        if (first_byte_)
            return;
        first_byte_ = true;
        std::lock_guard lock(p_.policy_mutex_);
        pick_.chooser->on_first_byte(rr_, pick_.chosen->id(), pick_.recorded);
    }

private:
    proxy& p_;
    const pick_result& pick_;
    const route_request& rr_;
    bool taken_ = false;
    bool first_byte_ = false;
    bool finished_ = false;
};

asio::awaitable<void> proxy::dispatch(http::request& req, http::response_writer& out,
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
    if (!co_await admit(req, out, plan, ticket))
        co_return;
    tried_set tried;
    attempt_result last;
    bool refreshed = false;
    std::chrono::milliseconds backoff_left{0};
    std::chrono::seconds largest_retry_after{0};
    for (std::int64_t attempt = 0; attempt <= cfg_.max_retries;) {
        const auto decide_start = clock_type::now();
        pick_result p = pick(plan, tried, decide_start);
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
            backoff_left = p.backoff_left;
            break;
        }
        inflight_guard held(p.chosen); // releases the count pick() raised
        ticket.routed();
        if (attempt > 0)
            metrics_.retries.inc();
        note_routed(plan.rr, p.d, plan.block_tokens);
        {
            done_notice done(*this, p, plan.rr);
            upstream_call call(cfg_.upstream, metrics_, p.chosen, p.d, request_id, plan.start,
                               plan.capture_response_id);
            call.on_first_byte([&done] { done.first_byte(); });
            call.on_response_id(
                [this, &p](std::string_view id) { responses_.remember(id, p.chosen->id()); });
            // Once the replica's answer is read, its place is free (in flight, the policy's
            // load, admission's room) while the client takes the rest at its own pace.
            call.on_replica_done([&done, &held, &ticket](int status) {
                done.taken(status < 400);
                done.finish();
                held.release();
                ticket = admission::ticket{}; // the next waiter may have this room
            });
            last = co_await call.run(req, out);
            // The replica took it when it answered below 400 (a stream it began counts).
            done.taken(last.status > 0 && last.status < 400);
        }
        if (last.client_gone || last.answered || last.sent_any) {
            // Done here: answered, or a client that left (no retry: closing the upstream
            // request was the point), or a stream that broke after its first byte.
            account(req, plan, p, last, request_id, attempt + 1);
            co_return;
        }
        if (last.backpressure)
            largest_retry_after = std::max(largest_retry_after, hold_off(*p.chosen, last));
        const bool again = cfg_.retry.allows(last.failed);
        p.chosen->note_error("a request failed: " + last.failure);
        LANES_LOG(warn, "proxy",
                  request_id << " attempt " << attempt + 1 << " on " << p.chosen->id()
                             << " failed: " << last.failure
                             << (again ? "" : " (not retried: --retry-on)"));
        tried.push_back(p.chosen->id()); // a retry goes elsewhere
        if (!again)
            break; // it may have run (or still run) there: not run again elsewhere
        ++attempt;
    }
    // Nothing reached the client.
    co_await answer_unrouted(req, out, plan, last, !tried.empty(), backoff_left,
                             largest_retry_after, request_id);
}

asio::awaitable<void> proxy::reject_unknown_model(http::request& req, http::response_writer& out,
                                                  const dispatch_plan& plan) {
    metrics_.requests.with({"none", "404", "unknown_model", "unknown"}).inc();
    count_for_key(plan.who, 404);
    co_await out.send(openai::error_response(req, openai::api_error::model_not_found(plan.model)));
}

asio::awaitable<void> proxy::answer_unrouted(http::request& req, http::response_writer& out,
                                             const dispatch_plan& plan, const attempt_result& last,
                                             bool tried_any, std::chrono::milliseconds backoff_left,
                                             std::chrono::seconds retry_after,
                                             const std::string& request_id) {
    http::response res = failure_response(req, last, tried_any, backoff_left);
    if (last.backpressure && retry_after.count() > 0)
        res.set(bhttp::field::retry_after, std::to_string(retry_after.count()));
    res.set(header_request_id, request_id);
    metrics_.requests.with({"none", std::to_string(res.result_int()), "failed", plan.model_label})
        .inc();
    count_for_key(plan.who, res.result_int());
    metrics_.duration.observe(seconds_since(plan.start));
    co_await out.send(std::move(res));
}

std::chrono::seconds proxy::hold_off(replica& r, const attempt_result& last) {
    // Load, not failure: the replica takes no request until its backoff is over.
    const auto asked =
        last.retry_after ? std::chrono::milliseconds(*last.retry_after) : cfg_.backpressure_backoff;
    const auto wait = std::clamp(asked, std::chrono::milliseconds(1), cfg_.max_backoff);
    r.backoff_until.store((clock_type::now() + wait).time_since_epoch().count());
    metrics_.backpressure.with({r.id()}).inc();
    return std::chrono::ceil<std::chrono::seconds>(wait);
}

void proxy::account(const http::request& req, const dispatch_plan& plan, const pick_result& p,
                    const attempt_result& last, std::string_view request_id,
                    std::int64_t attempts) {
    // A client that left counts as 499 (nginx's "client closed request"), a stream it cut
    // included.
    const int code = last.client_gone ? 499 : last.status ? last.status : 502;
    requests_counter(p.chosen->id(), code, p.d.reason, plan.model_label).inc();
    count_for_key(plan.who, code);
    const auto ended = clock_type::now();
    const double took = std::chrono::duration<double>(ended - plan.start).count();
    metrics_.duration.observe(took);
    live_.record({p.chosen->id(), plan.model_label, to_string(p.d.reason), code, p.d.matched_blocks,
                  plan.blocks.size(), took * 1000.0},
                 ended);
    if (!cfg_.access_log)
        return;
    LANES_LOG(info, "access",
              request_id << " " << req.target() << (plan.who.key ? " key=" : "") << plan.who.name()
                         << " replica=" << p.chosen->id() << " reason=" << to_string(p.d.reason)
                         << " status=" << code << " cached_blocks=" << p.d.matched_blocks << "/"
                         << plan.blocks.size() << " attempts=" << attempts
                         << " duration_ms=" << took * 1000.0
                         << (last.client_gone ? " client_closed"
                             : last.answered  ? ""
                                              : " stream_broken"));
}

void proxy::note_routed(const route_request& rr, const decision& d, std::size_t block_tokens) {
    metrics_.predicted_query_tokens.inc(static_cast<double>(rr.prompt_tokens));
    // A replica always computes the prompt's last token, so at most (tokens - 1) / block size
    // blocks can hit (vLLM's cap, which lanes replicas share).
    const std::size_t cap =
        rr.prompt_tokens > 0 && block_tokens > 0 ? (rr.prompt_tokens - 1) / block_tokens : 0;
    metrics_.predicted_hit_tokens.inc(
        static_cast<double>(std::min(d.matched_blocks, cap) * block_tokens));
}

common::metrics::counter& proxy::requests_counter(const std::string& replica_id, int status,
                                                  route_reason reason, const std::string& model) {
    // The last child used on this thread, keyed by this proxy's number (never reused, unlike
    // its address), so a child of a proxy's metrics that are gone is never handed out.
    struct last_used {
        std::uint64_t proxy = 0;
        std::uint64_t generation = 0; // of the family: a retired child is not handed out
        std::string replica;
        int status = 0;
        route_reason reason{};
        std::string model;
        common::metrics::counter* counter = nullptr;
    };
    thread_local last_used last;
    const std::uint64_t generation = metrics_.requests.generation();
    if (last.proxy == instance_ && last.generation == generation && last.status == status &&
        last.reason == reason && last.replica == replica_id && last.model == model)
        return *last.counter;
    std::array<char, 12> code{};
    const auto code_end = std::to_chars(code.data(), code.data() + code.size(), status).ptr;
    auto& counter = metrics_.requests.with(
        {replica_id,
         std::string_view(code.data(), static_cast<std::size_t>(code_end - code.data())),
         to_string(reason), model});
    last = {instance_, generation, replica_id, status, reason, model, &counter};
    return counter;
}

http::response proxy::failure_response(const http::request& req, const attempt_result& last,
                                       bool tried_any, std::chrono::milliseconds backoff_left) {
    if (!last.failed_body.empty() || last.backpressure) {
        metrics_.errors.with({last.backpressure ? "backpressure" : "upstream_status"}).inc();
        auto res = http::make_response(req, static_cast<bhttp::status>(last.status),
                                       last.failed_body, last.failed_content_type);
        for (const auto& [name, value] : last.failed_headers)
            res.insert(name, value);
        return res;
    }
    if (!tried_any) {
        metrics_.errors.with({"no_replica"}).inc();
        const bool backing_off = backoff_left.count() > 0;
        auto res = openai::error_response(
            req, openai::api_error::of(503, backing_off
                                                ? "every replica is busy; retry later"
                                                : "no healthy replica is available; retry later"));
        http::set_retry_after(res, backing_off ? backoff_left : cfg_.retry_after);
        return res;
    }
    if (last.failed == failure_class::timeout) {
        metrics_.errors.with({"upstream_timeout"}).inc();
        return openai::error_response(
            req, openai::api_error::of(504, "the replica did not answer within "
                                            "--first-byte-timeout"));
    }
    metrics_.errors.with({"upstream_failed"}).inc();
    const std::string what = cfg_.retry.allows(last.failed)
                                 ? "every replica tried failed: "
                                 : "the replica failed (not retried, see --retry-on): ";
    return openai::error_response(req, openai::api_error::of(502, what + last.failure));
}

} // namespace lanes::router
