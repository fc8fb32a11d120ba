#include "router/proxy.hpp"

#include "common/http/fetch.hpp"
#include "common/http/routes.hpp"
#include "common/log.hpp"
#include "common/openai/request.hpp"
#include "common/openai/response.hpp"
#include "common/prompt/tokenizer.hpp"
#include "router/request/request_view.hpp"
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

} // namespace

proxy::proxy(const router_config& cfg, replica_pool& pool, router_metrics& metrics,
             std::unique_ptr<policy> pol)
    : cfg_(cfg)
    , pool_(pool)
    , metrics_(metrics)
    , admin_(cfg.admin_token, pool)
    , policy_(std::move(pol))
    , snapshot_(pool)
    , instance_(++proxies_made) {}

// Not a coroutine itself: it picks the coroutine that answers and returns it to be awaited.
asio::awaitable<void> proxy::handle(http::request& req, http::response_writer& out) {
    struct route {
        std::string_view path;
        unsigned methods;
        asio::awaitable<void> (proxy::*serve)(http::request&, http::response_writer&);
    };
    static constexpr std::array<route, 5> routes{{
        {"/v1/completions", http::method_post, &proxy::completions},
        {"/v1/chat/completions", http::method_post, &proxy::chat_completions},
        {"/v1/models", http::method_get, &proxy::models},
        {"/health", http::method_get, &proxy::health},
        {"/metrics", http::method_get, &proxy::metrics_page},
    }};
    const std::string_view path = http::path_of(req.target());
    const auto match = http::match_route(routes, path, req.method());
    if (match.route)
        return (this->*match.route->serve)(req, out);
    if (admin::handles(path))
        return admin_.handle(req, out);
    if (match.path_methods)
        return answered(out.send(openai::method_not_allowed(req, match.path_methods)));
    return answered(out.send(openai::error_response(
        req, openai::api_error::not_found("no route for " + std::string(path)))));
}

asio::awaitable<void> proxy::completions(http::request& req, http::response_writer& out) {
    return generate(req, out, false);
}

asio::awaitable<void> proxy::chat_completions(http::request& req, http::response_writer& out) {
    return generate(req, out, true);
}

asio::awaitable<void> proxy::health(http::request& req, http::response_writer& out) {
    return answered(out.send(http::make_response(req, bhttp::status::ok, "", "text/plain")));
}

asio::awaitable<void> proxy::metrics_page(http::request& req, http::response_writer& out) {
    return answered(out.send(http::make_response(req, bhttp::status::ok, metrics_.expose(pool_),
                                                 common::metrics::registry::content_type)));
}

void proxy::release_snapshot() {
    std::lock_guard lock(policy_mutex_);
    snapshot_.clear();
}

decision proxy::pick(const route_request& rr, const tried_set& tried,
                     std::shared_ptr<replica>& chosen) {
    std::lock_guard lock(policy_mutex_);
    if (snapshot_.refresh(clock_type::now(), cfg_.stale_after))
        policy_->on_replicas_changed(snapshot_.view());
    const decision d = policy_->pick(rr, snapshot_.view(), tried);
    if (d.replica) {
        chosen = snapshot_.replica_at(*d.replica);
        // Counted in flight under the same lock as the choice, so the next pick sees it: a
        // half-open replica's single trial, and least-loaded choices made at the same moment on
        // other threads, depend on it. The caller releases it with an inflight_guard.
        chosen->inflight.fetch_add(1);
        policy_->on_routed(rr, chosen->id());
    }
    return d;
}

std::optional<openai::api_error> proxy::route_for(const http::request& req, bool chat,
                                                  std::vector<common::block_hash>& blocks,
                                                  std::string& model, route_request& rr) const {
    const auto kind = chat ? openai::endpoint::chat_completions : openai::endpoint::completions;
    std::optional<request_view> view = extract_request(kind, req.body());
    if (!view) { // unusual or invalid
        openai::parse_outcome parsed = openai::parse_generation_request(kind, req.body());
        if (parsed.error)
            return parsed.error;
        auto& g = *parsed.request;
        view = request_view{std::move(g.prompt),
                            std::nullopt,
                            std::move(g.prompt_token_ids),
                            g.model,
                            g.user,
                            g.stream};
    }
    // Token-id prompts get the BOS the replica adds, so the hashes match what it will cache.
    auto& ids = view->prompt_token_ids;
    if (!ids.empty() && ids.front() != common::bos_token)
        ids.insert(ids.begin(), common::bos_token);
    const auto block_size = static_cast<std::size_t>(cfg_.block_size);
    blocks = ids.empty() ? common::hash_prompt_blocks(view->prompt(), block_size)
                         : common::hash_blocks(ids, block_size);
    rr.blocks = blocks;
    rr.prompt_tokens = ids.empty() ? view->prompt().size() + 1 : ids.size();
    rr.session_key = session_key(req, view->user);
    if (view->model) {
        model = std::move(*view->model);
        rr.model = model;
    }
    return std::nullopt;
}

// Tells the policy an attempt ended when it goes out of scope, however the attempt ended: by its
// answer, a failure, an exception, or the coroutine's frame being destroyed at shutdown.
class proxy::done_notice {
public:
    done_notice(proxy& p, const std::string& replica_id)
        : p_(p)
        , replica_id_(replica_id) {}
    ~done_notice() {
        std::lock_guard lock(p_.policy_mutex_);
        p_.policy_->on_request_done(replica_id_);
    }
    done_notice(const done_notice&) = delete;
    done_notice& operator=(const done_notice&) = delete;

private:
    proxy& p_;
    const std::string& replica_id_;
};

void proxy::note_routed(const route_request& rr, const decision& d) {
    metrics_.predicted_query_tokens.inc(static_cast<double>(rr.prompt_tokens));
    // A replica always computes the prompt's last token, so at most (tokens - 1) / block size
    // blocks can hit (vLLM's cap, which lanes replicas share).
    const auto block = static_cast<std::size_t>(cfg_.block_size);
    const std::size_t cap = rr.prompt_tokens > 0 ? (rr.prompt_tokens - 1) / block : 0;
    metrics_.predicted_hit_tokens.inc(static_cast<double>(std::min(d.matched_blocks, cap) * block));
}

common::metrics::counter& proxy::requests_counter(const std::string& replica_id, int status,
                                                  route_reason reason) {
    // The last child used on this thread, keyed by this proxy's number (never reused, unlike
    // its address), so a child of a proxy's metrics that are gone is never handed out.
    struct last_used {
        std::uint64_t proxy = 0;
        std::string replica;
        int status = 0;
        route_reason reason{};
        common::metrics::counter* counter = nullptr;
    };
    thread_local last_used last;
    if (last.proxy == instance_ && last.status == status && last.reason == reason &&
        last.replica == replica_id)
        return *last.counter;
    std::array<char, 12> code{};
    const auto code_end = std::to_chars(code.data(), code.data() + code.size(), status).ptr;
    auto& counter = metrics_.requests.with(
        {replica_id,
         std::string_view(code.data(), static_cast<std::size_t>(code_end - code.data())),
         to_string(reason)});
    last = {instance_, replica_id, status, reason, &counter};
    return counter;
}

asio::awaitable<void> proxy::generate(http::request& req, http::response_writer& out, bool chat) {
    const auto start = clock_type::now();
    std::vector<common::block_hash> blocks;
    std::string model;
    route_request rr;
    if (auto error = route_for(req, chat, blocks, model, rr)) {
        metrics_.requests.with({"none", std::to_string(error->status), "invalid"}).inc();
        co_await out.send(openai::error_response(req, *error));
        co_return;
    }

    std::string request_id;
    if (auto id = req.find(header_request_id); id && !id->empty())
        request_id = std::string(*id);
    else
        request_id = openai::make_id("req-");

    tried_set tried;
    attempt_result last;
    for (std::int64_t attempt = 0; attempt <= cfg_.max_retries; ++attempt) {
        const auto decide_start = clock_type::now();
        std::shared_ptr<replica> chosen;
        const decision d = pick(rr, tried, chosen);
        metrics_.decision.observe(seconds_since(decide_start));
        if (!d.replica)
            break;
        const inflight_guard held(chosen); // releases the count pick() raised
        if (attempt > 0)
            metrics_.retries.inc();
        note_routed(rr, d);
        {
            const done_notice done(*this, chosen->id());
            upstream_call call(cfg_.upstream, metrics_, chosen, d, request_id, start);
            last = co_await call.run(req, out);
        }
        if (last.client_gone || last.answered || last.sent_any) {
            // Done here. A client that left counts as 499 (nginx's "client closed request"), a
            // stream it cut included; closing the upstream request was the point: no retry.
            const int code = last.client_gone ? 499 : last.status ? last.status : 502;
            requests_counter(chosen->id(), code, d.reason).inc();
            metrics_.duration.observe(seconds_since(start));
            if (cfg_.access_log)
                LANES_LOG(info, "access",
                          request_id << " " << req.target() << " replica=" << chosen->id()
                                     << " reason=" << to_string(d.reason) << " status=" << code
                                     << " cached_blocks=" << d.matched_blocks << "/"
                                     << blocks.size() << " attempts=" << attempt + 1
                                     << " duration_ms=" << seconds_since(start) * 1000.0
                                     << (last.client_gone ? " client_closed"
                                         : last.answered  ? ""
                                                          : " stream_broken"));
            co_return;
        }
        LANES_LOG(warn, "proxy",
                  request_id << " attempt " << attempt + 1 << " on " << chosen->id()
                             << " failed: " << last.failure);
        tried.push_back(chosen->id()); // a retry goes elsewhere
    }
    // Nothing reached the client: answer with the last upstream error, or our own.
    http::response res = failure_response(req, last, !tried.empty());
    res.set(header_request_id, request_id);
    metrics_.requests.with({"none", std::to_string(res.result_int()), "failed"}).inc();
    metrics_.duration.observe(seconds_since(start));
    co_await out.send(std::move(res));
}

http::response proxy::failure_response(const http::request& req, const attempt_result& last,
                                       bool tried_any) {
    if (!last.failed_body.empty()) {
        metrics_.errors.with({"upstream_status"}).inc();
        return http::make_response(req, static_cast<bhttp::status>(last.status), last.failed_body,
                                   last.failed_content_type);
    }
    if (!tried_any) {
        metrics_.errors.with({"no_replica"}).inc();
        auto res = openai::error_response(
            req, openai::api_error::of(503, "no healthy replica is available; retry later"));
        const auto seconds = std::max<std::int64_t>(1, (cfg_.retry_after.count() + 999) / 1000);
        res.set(bhttp::field::retry_after, std::to_string(seconds));
        return res;
    }
    metrics_.errors.with({"upstream_failed"}).inc();
    return openai::error_response(
        req, openai::api_error::of(502, "every replica tried failed: " + last.failure));
}

asio::awaitable<void> proxy::models(http::request& req, http::response_writer& out) {
    auto executor = co_await asio::this_coro::executor;
    nlohmann::json data = nlohmann::json::array();
    std::vector<std::string> seen;
    http::fetch_options options;
    options.connect_timeout = cfg_.upstream.connect_timeout;
    for (const auto& r : pool_.all()) {
        if (!r->healthy())
            continue;
        auto res =
            co_await http::fetch(executor, r->address(), bhttp::verb::get, "/v1/models", options);
        if (res.ec || res.status != 200)
            continue;
        const auto doc = nlohmann::json::parse(res.body, nullptr, false);
        if (doc.is_discarded() || !doc.contains("data") || !doc["data"].is_array())
            continue;
        for (const auto& m : doc["data"]) {
            if (!m.is_object() || !m.contains("id") || !m["id"].is_string())
                continue;
            const auto id = m["id"].get<std::string>();
            if (std::find(seen.begin(), seen.end(), id) == seen.end()) {
                seen.push_back(id);
                data.push_back(m);
            }
        }
    }
    const nlohmann::json body = {{"object", "list"}, {"data", data}};
    co_await out.send(http::make_response(req, bhttp::status::ok, body.dump()));
}

} // namespace lanes::router
