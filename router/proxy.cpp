#include "router/proxy.hpp"

#include "common/http/routes.hpp"
#include "common/log.hpp"
#include "common/openai/response.hpp"
#include "common/prompt/tokenizer.hpp"
#include "router/policies/factory.hpp"
#include "router/request/routing_key.hpp"
#include "router/request/session_key.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <array>
#include <atomic>
#include <charconv>
#include <chrono>

namespace lanes::router {

namespace asio = boost::asio;
namespace http = common::http;
namespace openai = common::openai;
namespace bhttp = boost::beast::http;
using clock_type = std::chrono::steady_clock;

namespace {

std::atomic<std::uint64_t> proxies_made{0};

double seconds_since(clock_type::time_point t) {
    return std::chrono::duration<double>(clock_type::now() - t).count();
}

// An answer whose delivery nobody waits on (the session sees a broken connection itself).
asio::awaitable<void> answered(asio::awaitable<bool> send) {
    co_await std::move(send);
}

// The paths passed on to the least-loaded replica serving their model, bodies untouched.
constexpr std::array<std::string_view, 11> forwarded_paths{
    "/v1/embeddings", "/v1/rerank", "/rerank",   "/v2/rerank",  "/v1/score",   "/score",
    "/pooling",       "/classify",  "/tokenize", "/detokenize", "/v1/messages"};

} // namespace

// What one proxied request is, for the dispatch loop.
struct proxy::dispatch_plan {
    route_request rr;
    std::string model; // as resolved (rr.model views it)
    std::vector<common::block_hash> blocks;
    bool by_policy = true;             // the routing policy, else least-loaded
    std::optional<std::string> pinned; // the replica that must answer (a response's producer)
    bool capture_response_id = false;
    std::size_t block_tokens = common::default_block_size;
    clock_type::time_point start = clock_type::now();
};

struct proxy::pick_result {
    decision d;
    std::shared_ptr<replica> chosen;
    bool unknown_model = false;
    std::chrono::milliseconds backoff_left{0}; // with no pick: the longest backoff in the way
};

proxy::proxy(const router_config& cfg, replica_pool& pool, router_metrics& metrics,
             std::unique_ptr<policy> pol, models_refresher refresh_models)
    : cfg_(cfg)
    , pool_(pool)
    , metrics_(metrics)
    , admin_(cfg.admin_token, pool)
    , refresh_models_(std::move(refresh_models))
    , policy_(std::move(pol))
    , forward_policy_(make_policy("least_loaded", cfg.policy_knobs))
    , snapshot_(pool, cfg.health.max_ejection_percent)
    , responses_(cfg.response_affinity_capacity)
    , status_(pool, metrics)
    , instance_(++proxies_made) {}

// Not a coroutine itself: it picks the coroutine that answers and returns it to be awaited.
asio::awaitable<void> proxy::handle(http::request& req, http::response_writer& out) {
    struct route {
        std::string_view path;
        unsigned methods;
        asio::awaitable<void> (proxy::*serve)(http::request&, http::response_writer&);
    };
    static constexpr std::array<route, 8> routes{{
        {"/v1/completions", http::method_post, &proxy::completions},
        {"/v1/chat/completions", http::method_post, &proxy::chat_completions},
        {"/v1/responses", http::method_post, &proxy::responses},
        {"/v1/models", http::method_get, &proxy::models},
        {"/health", http::method_get, &proxy::health},
        {"/liveness", http::method_get, &proxy::health},
        {"/readiness", http::method_get, &proxy::readiness},
        {"/metrics", http::method_get, &proxy::metrics_page},
    }};
    const std::string_view path = http::path_of(req.target());
    const auto match = http::match_route(routes, path, req.method());
    if (match.route)
        return (this->*match.route->serve)(req, out);
    const bool post = req.method() == bhttp::verb::post;
    if (post &&
        (std::find(forwarded_paths.begin(), forwarded_paths.end(), path) != forwarded_paths.end() ||
         path.starts_with("/v1/audio/")))
        return forwarded(req, out);
    if (path.starts_with("/v1/responses/"))
        return response_by_id(req, out);
    if (admin::handles(path))
        return admin_.handle(req, out);
    if (match.path_methods)
        return answered(out.send(openai::method_not_allowed(req, match.path_methods)));
    return answered(out.send(openai::error_response(
        req, openai::api_error::not_found("no route for " + std::string(path)))));
}

asio::awaitable<void> proxy::completions(http::request& req, http::response_writer& out) {
    return generate(req, out, body_kind::completions);
}

asio::awaitable<void> proxy::chat_completions(http::request& req, http::response_writer& out) {
    return generate(req, out, body_kind::chat);
}

asio::awaitable<void> proxy::responses(http::request& req, http::response_writer& out) {
    return generate(req, out, body_kind::responses);
}

asio::awaitable<void> proxy::health(http::request& req, http::response_writer& out) {
    return status_.health(req, out);
}

asio::awaitable<void> proxy::readiness(http::request& req, http::response_writer& out) {
    return status_.readiness(req, out);
}

asio::awaitable<void> proxy::metrics_page(http::request& req, http::response_writer& out) {
    return status_.metrics(req, out);
}

asio::awaitable<void> proxy::models(http::request& req, http::response_writer& out) {
    return status_.models(req, out);
}

void proxy::release_snapshot() {
    std::lock_guard lock(policy_mutex_);
    snapshot_.clear();
}

std::string proxy::resolve_model(const std::optional<std::string>& named) const {
    if (named && !named->empty())
        return *named;
    if (!cfg_.default_model.empty())
        return cfg_.default_model;
    return pool_.only_model(); // several models (or none known) and none named: any replica
}

asio::awaitable<void> proxy::generate(http::request& req, http::response_writer& out,
                                      body_kind kind) {
    dispatch_plan plan;
    read_result read = read_request(kind, req.body(), {cfg_.json_max_depth});
    if (read.error) {
        metrics_.requests.with({"none", std::to_string(read.error->status), "invalid", ""}).inc();
        co_await out.send(openai::error_response(req, *read.error));
        co_return;
    }
    request_view& view = *read.view;
    plan.model = resolve_model(view.model);
    plan.rr.model = plan.model;
    plan.capture_response_id = kind == body_kind::responses;
    if (view.previous_response_id)
        plan.pinned = responses_.find(*view.previous_response_id);
    routing_key key =
        make_routing_key(view, plan.model, pool_.units(), cfg_.monitor.bytes_per_token);
    plan.blocks = std::move(key.blocks);
    plan.block_tokens = key.block_tokens;
    plan.rr.blocks = plan.blocks;
    plan.rr.prompt_tokens = key.prompt_tokens;
    plan.rr.session_key = session_key(req, view.user);
    co_await dispatch(req, out, plan);
}

asio::awaitable<void> proxy::forwarded(http::request& req, http::response_writer& out) {
    dispatch_plan plan;
    plan.by_policy = false;
    // Only a JSON body names its model; anything else (a multipart upload) is passed on unread.
    if (req["content-type"].starts_with("application/json")) {
        read_result read = read_request(body_kind::other, req.body(), {cfg_.json_max_depth});
        if (read.error) {
            co_await out.send(openai::error_response(req, *read.error));
            co_return;
        }
        plan.model = resolve_model(read.view->model);
    } else {
        plan.model = resolve_model(std::nullopt);
    }
    plan.rr.model = plan.model;
    co_await dispatch(req, out, plan);
}

// GET /v1/responses/{id} and its POST .../cancel go where the response was made.
asio::awaitable<void> proxy::response_by_id(http::request& req, http::response_writer& out) {
    dispatch_plan plan;
    plan.by_policy = false;
    std::string_view id =
        http::path_of(req.target()).substr(std::string_view("/v1/responses/").size());
    id = id.substr(0, id.find('/'));
    plan.pinned = responses_.find(id);
    plan.model = resolve_model(std::nullopt);
    plan.rr.model = plan.model;
    co_await dispatch(req, out, plan);
}

proxy::pick_result proxy::pick(dispatch_plan& plan, const tried_set& tried) {
    pick_result out;
    const auto now = clock_type::now();
    std::lock_guard lock(policy_mutex_);
    if (snapshot_.refresh(now, cfg_.stale_after)) {
        policy_->on_replicas_changed(snapshot_.view());
        forward_policy_->on_replicas_changed(snapshot_.view());
    }
    const pool_snapshot& snap = snapshot_.view();
    // Which replicas serve the model; none that does (all lists known) makes it unknown.
    const auto serving = snapshot_.serving(plan.model, serves_);
    if (serving == snapshot_cache::model_serving::none) {
        out.unknown_model = true;
        return out;
    }
    plan.rr.serves = serving == snapshot_cache::model_serving::some ? std::span<const char>(serves_)
                                                                    : std::span<const char>();
    if (plan.pinned) {
        for (std::size_t i = 0; i < snap.replicas.size(); ++i)
            if (snap.replicas[i].id == *plan.pinned && eligible(snap, i, plan.rr, tried))
                out.d = {i, route_reason::response_affinity, 0};
    }
    policy& chooser = plan.by_policy ? *policy_ : *forward_policy_;
    if (!out.d.replica)
        out.d = chooser.pick(plan.rr, snap, tried);
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
    chooser.on_routed(plan.rr, out.chosen->id());
    return out;
}

// Tells the policy an attempt ended when it goes out of scope, however the attempt ended: by its
// answer, a failure, an exception, or the coroutine's frame being destroyed at shutdown.
class proxy::done_notice {
public:
    done_notice(proxy& p, policy& pol, const std::string& replica_id)
        : p_(p)
        , pol_(pol)
        , replica_id_(replica_id) {}
    ~done_notice() {
        std::lock_guard lock(p_.policy_mutex_);
        pol_.on_request_done(replica_id_);
    }
    done_notice(const done_notice&) = delete;
    done_notice& operator=(const done_notice&) = delete;

private:
    proxy& p_;
    policy& pol_;
    const std::string& replica_id_;
};

asio::awaitable<void> proxy::dispatch(http::request& req, http::response_writer& out,
                                      dispatch_plan& plan) {
    std::string request_id;
    if (auto id = req.find(header_request_id); id && !id->empty())
        request_id = std::string(*id);
    else
        request_id = openai::make_id("req-");

    tried_set tried;
    attempt_result last;
    bool refreshed = false;
    std::chrono::milliseconds backoff_left{0};
    std::chrono::seconds largest_retry_after{0};
    for (std::int64_t attempt = 0; attempt <= cfg_.max_retries;) {
        const auto decide_start = clock_type::now();
        pick_result p = pick(plan, tried);
        metrics_.decision.observe(seconds_since(decide_start));
        if (p.unknown_model && !refreshed && refresh_models_) {
            refreshed = true; // a model may have come up since the last read: read once more
            co_await refresh_models_();
            continue;
        }
        if (p.unknown_model) {
            metrics_.requests.with({"none", "404", "unknown_model", "unknown"}).inc();
            openai::api_error e{404, "The model `" + plan.model + "` does not exist.",
                                "NotFoundError", "model"};
            co_await out.send(openai::error_response(req, e));
            co_return;
        }
        if (!p.d.replica) {
            backoff_left = p.backoff_left;
            break;
        }
        const inflight_guard held(p.chosen); // releases the count pick() raised
        if (attempt > 0)
            metrics_.retries.inc();
        note_routed(plan.rr, p.d, plan.block_tokens);
        {
            policy& chooser = plan.by_policy && p.d.reason != route_reason::response_affinity
                                  ? *policy_
                                  : *forward_policy_;
            const done_notice done(*this, chooser, p.chosen->id());
            upstream_call call(cfg_.upstream, metrics_, p.chosen, p.d, request_id, plan.start,
                               plan.capture_response_id);
            last = co_await call.run(req, out);
        }
        if (!last.response_id.empty())
            responses_.remember(last.response_id, p.chosen->id());
        if (last.client_gone || last.answered || last.sent_any) {
            // Done here. A client that left counts as 499 (nginx's "client closed request"), a
            // stream it cut included; closing the upstream request was the point: no retry.
            const int code = last.client_gone ? 499 : last.status ? last.status : 502;
            requests_counter(p.chosen->id(), code, p.d.reason, plan.model).inc();
            metrics_.duration.observe(seconds_since(plan.start));
            if (cfg_.access_log)
                LANES_LOG(info, "access",
                          request_id << " " << req.target() << " replica=" << p.chosen->id()
                                     << " reason=" << to_string(p.d.reason) << " status=" << code
                                     << " cached_blocks=" << p.d.matched_blocks << "/"
                                     << plan.blocks.size() << " attempts=" << attempt + 1
                                     << " duration_ms=" << seconds_since(plan.start) * 1000.0
                                     << (last.client_gone ? " client_closed"
                                         : last.answered  ? ""
                                                          : " stream_broken"));
            co_return;
        }
        if (last.backpressure) {
            // Load, not failure: this replica takes no request until its backoff is over.
            const auto wait = backoff_for(last);
            p.chosen->backoff_until.store((clock_type::now() + wait).time_since_epoch().count());
            metrics_.backpressure.with({p.chosen->id()}).inc();
            largest_retry_after =
                std::max(largest_retry_after, std::chrono::ceil<std::chrono::seconds>(wait));
        }
        LANES_LOG(warn, "proxy",
                  request_id << " attempt " << attempt + 1 << " on " << p.chosen->id()
                             << " failed: " << last.failure);
        tried.push_back(p.chosen->id()); // a retry goes elsewhere
        ++attempt;
    }
    // Nothing reached the client: answer with the last upstream error, or our own.
    http::response res = failure_response(req, last, !tried.empty(), backoff_left);
    if (last.backpressure && largest_retry_after.count() > 0)
        res.set(bhttp::field::retry_after, std::to_string(largest_retry_after.count()));
    res.set(header_request_id, request_id);
    metrics_.requests.with({"none", std::to_string(res.result_int()), "failed", plan.model}).inc();
    metrics_.duration.observe(seconds_since(plan.start));
    co_await out.send(std::move(res));
}

std::chrono::milliseconds proxy::backoff_for(const attempt_result& r) const {
    const auto wait =
        r.retry_after ? std::chrono::milliseconds(*r.retry_after) : cfg_.backpressure_backoff;
    return std::clamp(wait, std::chrono::milliseconds(1), cfg_.max_backoff);
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
        std::string replica;
        int status = 0;
        route_reason reason{};
        std::string model;
        common::metrics::counter* counter = nullptr;
    };
    thread_local last_used last;
    if (last.proxy == instance_ && last.status == status && last.reason == reason &&
        last.replica == replica_id && last.model == model)
        return *last.counter;
    std::array<char, 12> code{};
    const auto code_end = std::to_chars(code.data(), code.data() + code.size(), status).ptr;
    auto& counter = metrics_.requests.with(
        {replica_id,
         std::string_view(code.data(), static_cast<std::size_t>(code_end - code.data())),
         to_string(reason), model});
    last = {instance_, replica_id, status, reason, model, &counter};
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
        const auto wait = backing_off ? backoff_left : cfg_.retry_after;
        const auto seconds = std::max<std::int64_t>(1, (wait.count() + 999) / 1000);
        res.set(bhttp::field::retry_after, std::to_string(seconds));
        return res;
    }
    metrics_.errors.with({"upstream_failed"}).inc();
    return openai::error_response(
        req, openai::api_error::of(502, "every replica tried failed: " + last.failure));
}

} // namespace lanes::router
