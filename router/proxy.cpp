#include "router/proxy.hpp"

#include "common/http/client.hpp"
#include "common/log.hpp"
#include "common/openai/request.hpp"
#include "common/prompt/block_hash.hpp"
#include "common/prompt/tokenizer.hpp"
#include "router/proxy_detail.hpp"
#include "router/request/request_view.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <atomic>
#include <charconv>
#include <chrono>

namespace lanes::router {

namespace asio = boost::asio;
namespace http = common::http;
namespace openai = common::openai;
namespace bhttp = boost::beast::http;
using namespace proxy_detail;

namespace {

// The session key: x-session-id header, else the body's `user`, else a `session_id` cookie.
std::optional<std::string> session_key(const http::request& req,
                                       const std::optional<std::string>& user) {
    if (auto id = req.find("x-session-id"); id && !id->empty())
        return std::string(*id);
    if (user && !user->empty())
        return *user;
    if (auto cookie = req.find("cookie")) {
        const std::string_view cookies = *cookie;
        constexpr std::string_view key = "session_id=";
        for (std::size_t pos = 0; pos < cookies.size();) {
            const auto end = std::min(cookies.find(';', pos), cookies.size());
            std::string_view item = cookies.substr(pos, end - pos);
            while (item.starts_with(' '))
                item.remove_prefix(1);
            if (item.starts_with(key) && item.size() > key.size())
                return std::string(item.substr(key.size()));
            pos = end + 1;
        }
    }
    return std::nullopt;
}

} // namespace

namespace {
std::atomic<std::uint64_t> proxies_made{0};
} // namespace

proxy::proxy(const router_config& cfg, replica_pool& pool, router_metrics& metrics,
             replica_monitor& monitor, std::unique_ptr<policy> pol)
    : cfg_(cfg)
    , pool_(pool)
    , metrics_(metrics)
    , monitor_(monitor)
    , admin_(cfg.admin_token, pool)
    , policy_(std::move(pol))
    , instance_(++proxies_made) {}

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

namespace {

// An answer whose delivery nobody waits on (the session sees a broken connection itself).
asio::awaitable<void> answered(asio::awaitable<bool> send) {
    co_await std::move(send);
}

} // namespace

// Not a coroutine itself: it picks the coroutine that answers and returns it to be awaited, which
// saves a frame and a resumption per request.
asio::awaitable<void> proxy::handle(http::request& req, http::response_writer& out) {
    const std::string_view target(req.target().data(), req.target().size());
    const std::string_view path = target.substr(0, target.find('?'));
    const bool post = req.method() == bhttp::verb::post;
    const bool get = req.method() == bhttp::verb::get || req.method() == bhttp::verb::head;
    auto refuse = [&](int status, std::string type, std::string message) {
        return answered(out.send(http::make_response(
            req, static_cast<bhttp::status>(status),
            openai::error_json(make_error(status, std::move(type), std::move(message))))));
    };
    if (path == "/v1/completions" || path == "/v1/chat/completions") {
        if (!post)
            return refuse(405, "MethodNotAllowed", "use POST");
        return generate(req, out, path == "/v1/chat/completions");
    }
    if (path == "/health" && get)
        return answered(out.send(http::make_response(req, bhttp::status::ok, "", "text/plain")));
    if (path == "/metrics" && get)
        return answered(out.send(http::make_response(req, bhttp::status::ok, metrics_.expose(pool_),
                                                     common::metrics::registry::content_type)));
    if (path == "/v1/models" && get)
        return models(req, out);
    if (admin::handles(path))
        return admin_.handle(req, out);
    return refuse(404, "NotFoundError", "no route for " + std::string(path));
}

void proxy::release_snapshot() {
    std::lock_guard lock(policy_mutex_);
    snap_replicas_.clear();
    snap_stats_.clear();
    snap_.replicas.clear();
    snap_version_ = UINT64_MAX;
}

decision proxy::pick(const route_request& rr, const tried_set& tried,
                     std::shared_ptr<replica>& chosen) {
    std::lock_guard lock(policy_mutex_);
    pool_.refresh(snap_, snap_replicas_, snap_version_, clock_type::now(), cfg_.stale_after,
                  snap_stats_);
    if (snap_version_ != seen_version_) {
        policy_->on_replicas_changed(snap_);
        seen_version_ = snap_version_;
    }
    const decision d = policy_->pick(rr, snap_, tried);
    if (d.replica) {
        chosen = snap_replicas_[*d.replica];
        // Counted in flight under the same lock as the choice, so the next pick sees it: a
        // half-open replica's single trial, and least-loaded choices made at the same moment on
        // other threads, depend on it. The caller releases it with an inflight_guard.
        chosen->inflight.fetch_add(1);
        policy_->on_routed(rr, chosen->id());
    }
    return d;
}

// Parses the body (the fast path, else the full parser, which names any problem) and fills the
// routing view of the request: its block hashes, token count, session key and model. `rr` views
// `blocks` and `model`, which the caller keeps.
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

// Tells the policy where the request went and counts the router's predicted prefix hit.
void proxy::note_routed(const route_request& rr, const routed& r) {
    metrics_.predicted_query_tokens.inc(static_cast<double>(rr.prompt_tokens));
    // A replica always computes the prompt's last token, so at most (tokens - 1) / block size
    // blocks can hit (vLLM's cap, which lanes replicas share).
    const auto block = static_cast<std::size_t>(cfg_.block_size);
    const std::size_t cap = rr.prompt_tokens > 0 ? (rr.prompt_tokens - 1) / block : 0;
    metrics_.predicted_hit_tokens.inc(
        static_cast<double>(std::min(r.choice.matched_blocks, cap) * block));
}

asio::awaitable<void> proxy::generate(http::request& req, http::response_writer& out, bool chat) {
    const auto start = clock_type::now();
    std::vector<common::block_hash> blocks;
    std::string model;
    route_request rr;
    if (auto error = route_for(req, chat, blocks, model, rr)) {
        metrics_.requests.with({"none", std::to_string(error->status), "invalid"}).inc();
        co_await out.send(http::make_response(req, static_cast<bhttp::status>(error->status),
                                              openai::error_json(*error)));
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
        routed r{std::move(chosen), d, request_id, start};
        if (attempt > 0)
            metrics_.retries.inc();
        note_routed(rr, r);
        {
            const done_notice done(*this, r.target->id());
            last = co_await forward(req, out, r);
        }
        if (last.client_gone || last.answered || last.sent_any) {
            // Done here. A client that left counts as 499 (nginx's "client closed request"), a
            // stream it cut included; closing the upstream request was the point: no retry.
            const int code = last.client_gone ? 499 : last.status ? last.status : 502;
            requests_counter(r.target->id(), code, d.reason).inc();
            metrics_.duration.observe(seconds_since(start));
            if (cfg_.access_log)
                LANES_LOG(info, "access",
                          request_id << " " << req.target() << " replica=" << r.target->id()
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
                  request_id << " attempt " << attempt + 1 << " on " << r.target->id()
                             << " failed: " << last.failure);
        tried.push_back(r.target->id()); // a retry goes elsewhere (kept only then: no copy
                                         // for the requests that need none)
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
        auto res = http::make_response(
            req, bhttp::status::service_unavailable,
            openai::error_json(make_error(503, "ServiceUnavailableError",
                                          "no healthy replica is available; retry later")));
        const auto seconds = std::max<std::int64_t>(1, (cfg_.retry_after.count() + 999) / 1000);
        res.set(bhttp::field::retry_after, std::to_string(seconds));
        return res;
    }
    metrics_.errors.with({"upstream_failed"}).inc();
    return http::make_response(
        req, bhttp::status::bad_gateway,
        openai::error_json(
            make_error(502, "BadGatewayError", "every replica tried failed: " + last.failure)));
}

asio::awaitable<void> proxy::models(http::request& req, http::response_writer& out) {
    auto executor = co_await asio::this_coro::executor;
    nlohmann::json data = nlohmann::json::array();
    std::vector<std::string> seen;
    http::fetch_options options;
    options.connect_timeout = cfg_.connect_timeout;
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
