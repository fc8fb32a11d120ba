#include "router/proxy/planner.hpp"

#include "common/http/routes.hpp"
#include "common/log.hpp"
#include "common/openai/error.hpp"
#include "router/access/cache_salt.hpp"
#include "router/fleet/replica_pool.hpp"
#include "router/metrics.hpp"
#include "router/proxy/accounting.hpp"
#include "router/proxy/client_limits.hpp"
#include "router/proxy/dispatcher.hpp"
#include "router/proxy/response_affinity.hpp"
#include "router/request/routing_key.hpp"
#include "router/request/session_key.hpp"

#include <boost/asio.hpp>

#include <algorithm>
#include <chrono>

namespace lanes::router {

namespace asio = boost::asio;
namespace http = common::http;
namespace openai = common::openai;

planner::planner(const proxy_config& cfg, const replica_pool& pool, router_metrics& metrics,
                 client_limits& limits, accounting& counts, response_affinity& responses,
                 dispatcher& dispatch)
    : cfg_(cfg)
    , pool_(pool)
    , metrics_(metrics)
    , limits_(limits)
    , counts_(counts)
    , responses_(responses)
    , dispatch_(dispatch)
    , tokenizer_(cfg.tokenizer.endpoint.empty() ? nullptr
                                                : std::make_unique<remote_tokenizer>(cfg.tokenizer))
    , local_(cfg.local_tokenizer.directories.empty()
                 ? nullptr
                 : std::make_unique<local_tokenizers>(cfg.local_tokenizer)) {
    if (local_)
        for (const auto& [model, t] : local_->by_model())
            LANES_LOG(info, "tokenize",
                      "tokenizer for " << (model.empty() ? std::string("every model") : model)
                                       << ": " << t->directory() << " (" << t->vocab_size()
                                       << " ids, " << t->digest() << ")");
}

std::string planner::resolve_model(const std::optional<std::string>& named) const {
    if (named && !named->empty())
        return *named;
    if (!cfg_.default_model.empty())
        return cfg_.default_model;
    return pool_.only_model(); // several models (or none known) and none named: any replica
}

std::string planner::model_label(const std::string& model) const {
    if (model.empty() || model == cfg_.default_model || pool_.lists(model))
        return model;
    return "unlisted";
}

asio::awaitable<void> planner::generate(http::request& req, http::response_writer& out,
                                        body_kind kind, client who) {
    const bool tokenizable = kind == body_kind::completions || kind == body_kind::chat;
    // A fleet of lanes replicas in the byte vocabulary caches bytes: a model's ids mean nothing
    // to it, and it is hashed as before.
    if (local_ && tokenizable && pool_.units().engine) {
        const auto start = std::chrono::steady_clock::now();
        auto ids = local_->token_ids(
            req.body(), kind == body_kind::chat,
            [this](const std::optional<std::string>& named) { return resolve_model(named); },
            {cfg_.json_max_depth, cfg_.tokenizer.max_values}, std::time(nullptr));
        if (ids) {
            metrics_.local_tokenize_seconds.observe(seconds_since(start));
            metrics_.tokenize.with({"local"}).inc();
            return generate_with_ids(req, out, kind, std::move(who), std::move(*ids));
        }
    }
    if (tokenizer_ && tokenizable)
        return generate_tokenized(req, out, kind, std::move(who));
    return generate_hashed(req, out, kind, std::move(who), nullptr);
}

asio::awaitable<void> planner::generate_with_ids(http::request& req, http::response_writer& out,
                                                 body_kind kind, client who,
                                                 std::vector<std::uint32_t> ids) {
    co_await generate_hashed(req, out, kind, std::move(who), &ids);
}

asio::awaitable<void> planner::generate_tokenized(http::request& req, http::response_writer& out,
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
            metrics_.tokenize_seconds.observe(seconds_since(start));
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

asio::awaitable<void> planner::generate_hashed(http::request& req, http::response_writer& out,
                                               body_kind kind, client who,
                                               const std::vector<std::uint32_t>* engine_ids) {
    dispatch_plan plan; // (its clock starts here)
    plan.who = std::move(who);
    read_result read = read_request(kind, req.body(), {cfg_.json_max_depth});
    if (read.error) {
        metrics_.requests.with({"none", std::to_string(read.error->status), "invalid", ""}).inc();
        counts_.count_for_key(plan.who, read.error->status);
        out.note_refusal("invalid_request");
        return out.answer(openai::error_response(req, *read.error));
    }
    request_view& view = *read.view;
    if (engine_ids && view.prompt_token_ids.empty()) {
        view.prompt_token_ids = *engine_ids;
        // The template rendered the tools into those ids: the root must not hold them again
        // (the engine's KV events, which carry the same ids, are rooted without them).
        view.context_hash = 0;
    }
    std::string salt;
    if (cfg_.isolate_cache_by_key && plan.who.key) {
        if (has_field(req.body(), "cache_salt")) {
            counts_.count_for_key(plan.who, 400);
            out.note_refusal("invalid_request");
            return out.answer(openai::error_response(
                req,
                openai::api_error::bad_request(
                    "cache_salt is set by the router (--isolate-cache-by-key)", "cache_salt")));
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
    if (auto refused = limits_.take_tokens(req, plan.who, plan.rr.prompt_tokens)) {
        out.note_refusal("rate_limit_tokens");
        return out.answer(std::move(*refused));
    }
    // Last: the view read above points into the body this replaces.
    if (!salt.empty())
        req.body() = with_cache_salt(req.body(), salt);
    return dispatch_.dispatch(req, out, std::move(plan));
}

asio::awaitable<void> planner::forwarded(http::request& req, http::response_writer& out,
                                         client who) {
    dispatch_plan plan;
    plan.who = std::move(who);
    plan.by_policy = false;
    // Only a JSON body names its model; anything else (a multipart upload) is passed on unread.
    if (req["content-type"].starts_with("application/json")) {
        read_result read = read_request(body_kind::other, req.body(), {cfg_.json_max_depth});
        if (read.error) {
            counts_.count_for_key(plan.who, read.error->status);
            out.note_refusal("invalid_request");
            return out.answer(openai::error_response(req, *read.error));
        }
        plan.model = resolve_model(read.view->model);
    } else {
        plan.model = resolve_model(std::nullopt);
    }
    plan.model_label = model_label(plan.model);
    const std::size_t bpt = std::max<std::size_t>(1, cfg_.monitor.bytes_per_token);
    if (auto refused = limits_.take_tokens(req, plan.who, req.body().size() / bpt)) {
        out.note_refusal("rate_limit_tokens");
        return out.answer(std::move(*refused));
    }
    return dispatch_.dispatch(req, out, std::move(plan));
}

asio::awaitable<void> planner::response_by_id(http::request& req, http::response_writer& out,
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
    return dispatch_.dispatch(req, out, std::move(plan));
}

} // namespace lanes::router
