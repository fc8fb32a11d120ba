// The router's route table and the handlers that read a request and make its dispatch plan:
// generation requests read for their model, prompt blocks and session; the rest of the API for
// its model only; a response's continuation pinned to the replica that made it.
#include "router/proxy.hpp"

#include "common/access/secret.hpp"
#include "common/http/routes.hpp"
#include "common/log.hpp"
#include "common/openai/error.hpp"
#include "router/access/cache_salt.hpp"
#include "router/access/request_cost.hpp"
#include "router/policies/factory.hpp"
#include "router/request/routing_key.hpp"
#include "router/request/session_key.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <atomic>
#include <chrono>

namespace lanes::router {

namespace asio = boost::asio;
namespace http = common::http;
namespace openai = common::openai;
namespace bhttp = boost::beast::http;

namespace {

std::atomic<std::uint64_t> proxies_made{0};

// An answer whose delivery nobody waits on (the session sees a broken connection itself).
asio::awaitable<void> answered(asio::awaitable<bool> send) {
    co_await std::move(send);
}

// The paths passed on to the least-loaded replica serving their model, bodies untouched.
constexpr std::array<std::string_view, 11> forwarded_paths{
    "/v1/embeddings", "/v1/rerank", "/rerank",   "/v2/rerank",  "/v1/score",   "/score",
    "/pooling",       "/classify",  "/tokenize", "/detokenize", "/v1/messages"};

admin::access admin_access(const router_config& cfg) {
    admin::access a;
    if (!cfg.admin_token.empty())
        a.token = common::access::sha256(cfg.admin_token);
    a.insecure_loopback = cfg.admin_insecure_loopback;
    return a;
}

} // namespace

proxy::proxy(const router_config& cfg, replica_pool& pool, router_metrics& metrics,
             std::unique_ptr<policy> pol, models_refresher refresh_models)
    : cfg_(cfg)
    , pool_(pool)
    , metrics_(metrics)
    , admin_(admin_access(cfg), pool)
    , keys_(cfg.api_key_file, cfg.api_keys_env)
    , limiter_(cfg.rate)
    , admission_(
          [&cfg] {
              admission_settings a = cfg.admission;
              a.replica_caps = cfg.replica_max_inflight > 0 || cfg.replica_queue_threshold > 0;
              return a;
          }(),
          [this](const std::string& model, const std::string& replica) {
              return free_slots(model, replica);
          })
    , refresh_models_(std::move(refresh_models))
    , policy_(std::move(pol))
    , forward_policy_(make_policy("least_loaded", cfg.policy_knobs))
    , snapshot_(pool, cfg.health.max_ejection_percent)
    , responses_(cfg.response_affinity_capacity)
    , status_(pool, metrics)
    , tokenizer_(cfg.tokenizer.endpoint.empty() ? nullptr
                                                : std::make_unique<remote_tokenizer>(cfg.tokenizer))
    , live_(cfg.ui_decisions)
    , instance_(++proxies_made) {
    std::string why;
    proxies_.parse(cfg.trusted_proxies, why); // validated with the rest of the config
    if (admission_.enabled())
        metrics_.read_queue_depth_from([this] { return admission_.waiting(); });
}

// Not a coroutine itself: it picks the coroutine that answers and returns it to be awaited.
asio::awaitable<void> proxy::handle(http::request& req, http::response_writer& out) {
    // Served without a key: probes (and the metrics with --metrics-public, or no keys at all).
    static constexpr std::array<route, 6> open_routes{{
        {"/health", http::method_get, &proxy::health},
        {"/liveness", http::method_get, &proxy::health},
        {"/readiness", http::method_get, &proxy::readiness},
        {"/metrics", http::method_get, &proxy::metrics_page},
        {"/ui", http::method_get, &proxy::ui_page},
        {"/ui/state", http::method_get, &proxy::ui_state},
    }};
    static constexpr std::array<client_route, 4> routes{{
        {"/v1/completions", http::method_post, &proxy::completions},
        {"/v1/chat/completions", http::method_post, &proxy::chat_completions},
        {"/v1/responses", http::method_post, &proxy::responses},
        {"/v1/models", http::method_get, &proxy::models},
    }};
    const std::string_view path = http::path_of(req.target());
    auto open = http::match_route(open_routes, path, req.method());
    if ((path == "/ui" || path == "/ui/state") && !cfg_.ui_public)
        open = {}; // names the replicas: on the admin listener only, unless asked for
    const bool keyed = keys_.configured();
    if (open.route && (!keyed || cfg_.metrics_public || open.route->serve != &proxy::metrics_page))
        return (this->*open.route->serve)(req, out);
    if (open.path_methods && !open.route)
        return unrouted(req, out, open.path_methods, "");
    client who;
    if (keyed) {
        who.key = keys_.table()->find(common::access::bearer_token(req["authorization"]));
        if (!who.key) {
            metrics_.access_refusals.with({"invalid_api_key"}).inc();
            openai::api_error e = openai::api_error::of(
                401, "Incorrect API key provided. Send it as 'Authorization: Bearer <key>'.",
                "invalid_request_error");
            e.code = "invalid_api_key";
            auto res = openai::error_response(req, e);
            res.set(bhttp::field::www_authenticate, "Bearer");
            return answered(out.send(std::move(res)));
        }
        req.remove("authorization"); // a client's key is the router's business, not the engine's
        if (open.route)
            return (this->*open.route->serve)(req, out); // /metrics, with a key
        who.identity = who.key->name;
    } else {
        // Every X-Forwarded-For field, as one list: a proxy that adds its own field rather than
        // appending to the client's must not leave the client's to be read as the nearest hop.
        who.identity =
            proxies_.client_address(out.remote().address(), req.joined("x-forwarded-for"));
    }
    if (const limit_verdict v = limiter_.take_request(who.identity, who.limits()); !v.allowed) {
        metrics_.access_refusals.with({"rate_limit_requests"}).inc();
        return answered(out.send(rate_limited(req, who, "requests", v)));
    }
    const auto match = http::match_route(routes, path, req.method());
    if (match.route)
        return (this->*match.route->serve)(req, out, std::move(who));
    const bool post = req.method() == bhttp::verb::post;
    if (post &&
        (std::find(forwarded_paths.begin(), forwarded_paths.end(), path) != forwarded_paths.end() ||
         path.starts_with("/v1/audio/")))
        return forwarded(req, out, std::move(who));
    if (path.starts_with("/v1/responses/"))
        return response_by_id(req, out, std::move(who));
    return unrouted(req, out, match.path_methods, "no route for ");
}

asio::awaitable<void> proxy::handle_admin(http::request& req, http::response_writer& out) {
    // The live page needs no token to read (its drain buttons send the token they are given).
    static constexpr std::array<route, 6> routes{{
        {"/health", http::method_get, &proxy::health},
        {"/liveness", http::method_get, &proxy::health},
        {"/readiness", http::method_get, &proxy::readiness},
        {"/metrics", http::method_get, &proxy::metrics_page},
        {"/ui", http::method_get, &proxy::ui_page},
        {"/ui/state", http::method_get, &proxy::ui_state_admin},
    }};
    const std::string_view path = http::path_of(req.target());
    const auto match = http::match_route(routes, path, req.method());
    if (match.route)
        return (this->*match.route->serve)(req, out);
    if (admin::handles(path))
        return admin_.handle(req, out);
    return unrouted(req, out, match.path_methods, "no admin route for ");
}

asio::awaitable<void> proxy::ui_page(http::request& req, http::response_writer& out) {
    auto res = http::make_response(req, bhttp::status::ok, std::string(live_page_html()),
                                   "text/html; charset=utf-8");
    res.set(bhttp::field::cache_control, "no-store");
    // Nothing from elsewhere, no framing by other sites.
    res.set("content-security-policy",
            "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; "
            "connect-src 'self'; img-src 'self'; frame-ancestors 'none'");
    res.set("x-content-type-options", "nosniff");
    return answered(out.send(std::move(res)));
}

std::string proxy::ui_state_json(bool admin) {
    live_state::reason_counts reasons;
    std::uint64_t total = 0;
    // lanes_router_requests_total{replica, code, reason, model}: summed by replica and reason.
    metrics_.requests.for_each([&](const common::metrics::label_values& v, const auto& c) {
        const auto n = static_cast<std::uint64_t>(c.value());
        total += n;
        if (v.size() == 4 && v[0] != "none")
            reasons[v[0]][v[2]] += n;
    });
    return live_.json(pool_, admin, reasons, total);
}

asio::awaitable<void> proxy::ui_state(http::request& req, http::response_writer& out) {
    auto res = http::make_response(req, bhttp::status::ok, ui_state_json(false));
    res.set(bhttp::field::cache_control, "no-store");
    return answered(out.send(std::move(res)));
}

asio::awaitable<void> proxy::ui_state_admin(http::request& req, http::response_writer& out) {
    auto res = http::make_response(req, bhttp::status::ok, ui_state_json(true));
    res.set(bhttp::field::cache_control, "no-store");
    return answered(out.send(std::move(res)));
}

// 405 with Allow for a known path asked with another method, else 404.
asio::awaitable<void> proxy::unrouted(const http::request& req, http::response_writer& out,
                                      unsigned path_methods, std::string_view not_found) {
    if (path_methods)
        return answered(out.send(openai::method_not_allowed(req, path_methods)));
    return answered(out.send(openai::error_response(
        req, openai::api_error::not_found(std::string(not_found) +
                                          std::string(http::path_of(req.target()))))));
}

asio::awaitable<void> proxy::completions(http::request& req, http::response_writer& out,
                                         client who) {
    return generate(req, out, body_kind::completions, std::move(who));
}

asio::awaitable<void> proxy::chat_completions(http::request& req, http::response_writer& out,
                                              client who) {
    return generate(req, out, body_kind::chat, std::move(who));
}

asio::awaitable<void> proxy::responses(http::request& req, http::response_writer& out, client who) {
    return generate(req, out, body_kind::responses, std::move(who));
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

// Right after start a healthy replica's first /v1/models read may still be out: the answer waits
// for it (at most --models-timeout) rather than leave that replica's models out of the union.
asio::awaitable<void> proxy::models(http::request& req, http::response_writer& out, client) {
    const auto unread = [this] {
        for (const auto& r : pool_.all())
            if (r->healthy() && !r->models()->known)
                return true;
        return false;
    };
    if (unread()) {
        if (refresh_models_)
            co_await refresh_models_();
        asio::steady_timer timer(co_await asio::this_coro::executor);
        const auto until = std::chrono::steady_clock::now() + cfg_.monitor.models_timeout;
        while (unread() && std::chrono::steady_clock::now() < until) {
            timer.expires_after(std::chrono::milliseconds(10));
            co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
        }
    }
    co_await status_.models(req, out);
}

http::response proxy::rate_limited(const http::request& req, const client& who,
                                   std::string_view kind, const limit_verdict& v) {
    count_for_key(who, 429);
    const std::string k(kind);
    openai::api_error e = openai::api_error::of(
        429,
        "Rate limit reached for " + k + (who.key ? " of key " + who.key->name : std::string()) +
            ": limit " + std::to_string(static_cast<long long>(v.state.limit)) +
            (kind == "tokens" ? " a minute" : " at once") + ". Retry after " +
            reset_text(v.retry_after) + ".",
        k);
    e.code = "rate_limit_exceeded";
    auto res = openai::error_response(req, e);
    http::set_retry_after(res, v.retry_after);
    res.set("x-ratelimit-limit-" + k, std::to_string(static_cast<long long>(v.state.limit)));
    res.set("x-ratelimit-remaining-" + k,
            std::to_string(static_cast<long long>(v.state.remaining)));
    res.set("x-ratelimit-reset-" + k, reset_text(v.state.reset));
    return res;
}

std::optional<http::response> proxy::over_token_limit(const http::request& req, const client& who,
                                                      std::size_t prompt_tokens) {
    if (limiter_.tpm_for(who.limits()) <= 0)
        return std::nullopt;
    const double cost = static_cast<double>(prompt_tokens) +
                        static_cast<double>(requested_output_tokens(req.body()));
    const limit_verdict v = limiter_.take_tokens(who.identity, who.limits(), cost);
    if (v.allowed)
        return std::nullopt;
    metrics_.access_refusals.with({"rate_limit_tokens"}).inc();
    return rate_limited(req, who, "tokens", v);
}

void proxy::count_for_key(const client& who, int status) {
    if (who.key)
        metrics_.key_requests.with({who.name(), std::to_string(status)}).inc();
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

std::string proxy::model_label(const std::string& model) const {
    if (model.empty() || model == cfg_.default_model || pool_.lists(model))
        return model;
    return "unlisted";
}

// Not coroutines themselves (as handle): each reads what it needs, makes the plan and returns
// the dispatch that carries it, or the refusal.
asio::awaitable<void> proxy::generate(http::request& req, http::response_writer& out,
                                      body_kind kind, client who) {
    if (tokenizer_ && (kind == body_kind::completions || kind == body_kind::chat))
        return generate_tokenized(req, out, kind, std::move(who));
    return generate_hashed(req, out, kind, std::move(who), nullptr);
}

// The engine's token ids for the request (from the LRU, else the tokenize endpoint; none when
// that fails or the prompt is token ids already), then generate_hashed.
asio::awaitable<void> proxy::generate_tokenized(http::request& req, http::response_writer& out,
                                                body_kind kind, client who) {
    std::optional<std::vector<std::uint32_t>> ids;
    const auto model_of = [this](const std::optional<std::string>& named) {
        return resolve_model(named);
    };
    if (const auto q = make_tokenize_query(req.body(), kind == body_kind::chat, model_of,
                                           {cfg_.json_max_depth, cfg_.tokenizer.max_values})) {
        ids = tokenizer_->cached(*q);
        if (ids) {
            metrics_.tokenize.with({"cached"}).inc();
        } else {
            const auto start = std::chrono::steady_clock::now();
            ids = co_await tokenizer_->fetch(co_await asio::this_coro::executor, *q);
            metrics_.tokenize_seconds.observe(
                std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
            metrics_.tokenize.with({ids ? "fetched" : "failed"}).inc();
            if (!ids)
                LANES_LOG_THROTTLED(warn, "tokenize",
                                    "no token ids from " << cfg_.tokenizer.endpoint
                                                         << ": the request is routed on its text");
        }
    } else {
        metrics_.tokenize.with({"skipped"}).inc();
    }
    const std::vector<std::uint32_t>* engine_ids = nullptr;
    if (ids)
        engine_ids = &*ids;
    co_await generate_hashed(req, out, kind, std::move(who), engine_ids);
}

asio::awaitable<void> proxy::generate_hashed(http::request& req, http::response_writer& out,
                                             body_kind kind, client who,
                                             const std::vector<std::uint32_t>* engine_ids) {
    dispatch_plan plan; // (its clock starts here)
    plan.who = std::move(who);
    read_result read = read_request(kind, req.body(), {cfg_.json_max_depth});
    if (read.error) {
        metrics_.requests.with({"none", std::to_string(read.error->status), "invalid", ""}).inc();
        count_for_key(plan.who, read.error->status);
        return answered(out.send(openai::error_response(req, *read.error)));
    }
    request_view& view = *read.view;
    if (engine_ids && view.prompt_token_ids.empty())
        view.prompt_token_ids = *engine_ids;
    std::string salt;
    if (cfg_.isolate_cache_by_key && plan.who.key) {
        if (has_field(req.body(), "cache_salt")) {
            count_for_key(plan.who, 400);
            return answered(out.send(openai::error_response(
                req,
                openai::api_error::bad_request(
                    "cache_salt is set by the router (--isolate-cache-by-key)", "cache_salt"))));
        }
        salt = cache_salt_for(plan.who.key->name);
        view.context_hash ^= common::salted_root(salt); // the router's blocks split by key too
    }
    plan.model = resolve_model(view.model);
    plan.model_label = model_label(plan.model);
    plan.capture_response_id = kind == body_kind::responses;
    if (view.previous_response_id)
        plan.pinned = responses_.find(*view.previous_response_id);
    routing_key key =
        make_routing_key(view, plan.model, pool_.units(), cfg_.monitor.bytes_per_token);
    plan.blocks = std::move(key.blocks);
    plan.block_tokens = key.block_tokens;
    plan.rr.prompt_tokens = key.prompt_tokens;
    plan.rr.session = request_session(req, view.user, cfg_.session_key_limit);
    if (auto refused = over_token_limit(req, plan.who, plan.rr.prompt_tokens))
        return answered(out.send(std::move(*refused)));
    // Last: the view read above points into the body this replaces.
    if (!salt.empty())
        req.body() = with_cache_salt(req.body(), salt);
    return dispatch(req, out, std::move(plan));
}

asio::awaitable<void> proxy::forwarded(http::request& req, http::response_writer& out, client who) {
    dispatch_plan plan;
    plan.who = std::move(who);
    plan.by_policy = false;
    // Only a JSON body names its model; anything else (a multipart upload) is passed on unread.
    if (req["content-type"].starts_with("application/json")) {
        read_result read = read_request(body_kind::other, req.body(), {cfg_.json_max_depth});
        if (read.error) {
            count_for_key(plan.who, read.error->status);
            return answered(out.send(openai::error_response(req, *read.error)));
        }
        plan.model = resolve_model(read.view->model);
    } else {
        plan.model = resolve_model(std::nullopt);
    }
    plan.model_label = model_label(plan.model);
    const std::size_t bpt = std::max<std::size_t>(1, cfg_.monitor.bytes_per_token);
    if (auto refused = over_token_limit(req, plan.who, req.body().size() / bpt))
        return answered(out.send(std::move(*refused)));
    return dispatch(req, out, std::move(plan));
}

// GET /v1/responses/{id} and its POST .../cancel go where the response was made.
asio::awaitable<void> proxy::response_by_id(http::request& req, http::response_writer& out,
                                            client who) {
    dispatch_plan plan;
    plan.who = std::move(who);
    plan.by_policy = false;
    std::string_view id =
        http::path_of(req.target()).substr(std::string_view("/v1/responses/").size());
    id = id.substr(0, id.find('/'));
    plan.pinned = responses_.find(id);
    plan.model = resolve_model(std::nullopt);
    plan.model_label = model_label(plan.model);
    return dispatch(req, out, std::move(plan));
}

} // namespace lanes::router
