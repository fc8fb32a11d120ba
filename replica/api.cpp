#include "replica/api.hpp"

#include "common/access/secret.hpp"
#include "common/http/routes.hpp"
#include "common/http/sse.hpp"
#include "common/kv_events/events.hpp"
#include "common/log.hpp"
#include "common/openai/error.hpp"
#include "common/openai/request.hpp"
#include "common/openai/response.hpp"
#include "replica/prompt_ids.hpp"
#include "replica/sampling_request.hpp"

#include <boost/asio.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <chrono>
#include <iterator>
#include <limits>
#include <mutex>
#include <random>

namespace lanes::replica {

namespace asio = boost::asio;
namespace http = common::http;
namespace openai = common::openai;
using status = boost::beast::http::status;
using verb = boost::beast::http::verb;

namespace {

// max_tokens of a completion that does not set it: OpenAI's default, which vLLM keeps.
constexpr std::int64_t completions_default_max_tokens = 16;

std::int64_t unix_now() {
    return std::chrono::duration_cast<std::chrono::seconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

asio::awaitable<void> send_error(http::request& req, http::response_writer& out,
                                 const openai::api_error& e) {
    co_await out.send(openai::error_response(req, e));
}

// Validation the replica adds on top of the wire format (model name, n, features it does not
// have, context length), and the request's max_tokens: as asked, else the completions default
// of 16, else for chat the rest of the context (or --default-max-tokens, if set, within it);
// then at most the model's max_new_tokens (vLLM's get_max_tokens). Messages and bounds as
// vLLM's.
std::optional<openai::api_error> check_request(const replica_config& cfg,
                                               const openai::generation_request& g,
                                               std::int64_t prompt_tokens, std::int64_t max_len,
                                               const generation_defaults& defaults,
                                               std::int64_t& max_tokens) {
    if (g.model && !cfg.serves(*g.model))
        return openai::api_error::model_not_found(*g.model);
    if (g.n != 1)
        return openai::api_error::bad_request("only n=1 is supported", "n");
    if (g.unsupported)
        return openai::api_error::bad_request(
            "'" + *g.unsupported + "' is not supported by lanes replicas", *g.unsupported);
    if (g.kind == openai::endpoint::chat_completions && g.messages.empty())
        return openai::api_error::bad_request("'messages' must not be empty", "messages");
    const std::string context =
        "This model's maximum context length is " + std::to_string(max_len) + " tokens";
    if (prompt_tokens >= max_len)
        return openai::api_error::bad_request(
            context + ". However, your request has " + std::to_string(prompt_tokens) +
            " input tokens. Please reduce the length of the input messages.");
    const std::int64_t room = max_len - prompt_tokens;
    if (g.max_tokens || g.kind == openai::endpoint::completions) {
        max_tokens = g.max_tokens.value_or(completions_default_max_tokens);
        if (max_tokens > room) // compared, not added: a huge max_tokens must not overflow
            return openai::api_error::bad_request(
                "'max_tokens' or 'max_completion_tokens' is too large: " +
                    std::to_string(max_tokens) + ". " + context + " and your request has " +
                    std::to_string(prompt_tokens) + " input tokens (" + std::to_string(max_tokens) +
                    " > " + std::to_string(max_len) + " - " + std::to_string(prompt_tokens) + ").",
                "max_tokens");
    } else {
        max_tokens = cfg.default_max_tokens > 0 ? std::min(cfg.default_max_tokens, room) : room;
    }
    max_tokens = std::min(max_tokens, defaults.max_tokens.value_or(max_tokens));
    return std::nullopt;
}

// How many alternatives a chat token lists (top_logprobs); completions list them all.
std::size_t logprobs_top(const openai::generation_request& g) {
    if (!g.logprobs)
        return 0;
    return *g.logprobs == -1 ? std::numeric_limits<std::size_t>::max() // all there are
                             : static_cast<std::size_t>(*g.logprobs);
}

} // namespace

api::api(const replica_config& cfg, engine& eng, replica_metrics& metrics)
    : cfg_(cfg)
    , engine_(eng)
    , metrics_(metrics)
    , created_(unix_now())
    , dump_token_(cfg.kv_dump_token.empty()
                      ? std::nullopt
                      : std::optional(common::access::sha256(cfg.kv_dump_token)))
    , seed_base_((static_cast<std::uint64_t>(std::random_device{}()) << 32) ^
                 std::random_device{}())
    , defaults_(load_generation_defaults(cfg.model, cfg.tokenizer)) {}

std::uint64_t api::fresh_seed() {
    // splitmix64's finalizer over base + n·golden ratio: distinct counters, distinct seeds.
    std::uint64_t z = seed_base_ + seed_count_.fetch_add(1) * 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

asio::awaitable<void> api::handle(http::request& req, http::response_writer& out) {
    struct route {
        std::string_view path;
        unsigned methods;
        asio::awaitable<void> (api::*serve)(http::request&, http::response_writer&);
    };
    static constexpr std::array<route, 9> routes{{
        {"/v1/completions", http::method_post, &api::completions},
        {"/v1/chat/completions", http::method_post, &api::chat_completions},
        {"/v1/models", http::method_get, &api::models},
        {"/health", http::method_get, &api::health},
        {"/metrics", http::method_get, &api::metrics_page},
        {"/load", http::method_get, &api::load},
        {common::kv_events::dump_path, http::method_get, &api::kv_blocks},
        {"/tokenize", http::method_post, &api::tokenize},
        {"/detokenize", http::method_post, &api::detokenize},
    }};
    const std::string_view path = http::path_of(req.target());
    const auto match = http::match_route(routes, path, req.method());
    if (match.route) {
        co_await (this->*match.route->serve)(req, out);
    } else if (match.path_methods) {
        co_await out.send(openai::method_not_allowed(req, match.path_methods));
    } else {
        co_await send_error(req, out,
                            openai::api_error::not_found("no route for " + std::string(path)));
    }
}

asio::awaitable<void> api::completions(http::request& req, http::response_writer& out) {
    return generate(req, out, false);
}

asio::awaitable<void> api::chat_completions(http::request& req, http::response_writer& out) {
    return generate(req, out, true);
}

asio::awaitable<void> api::health(http::request& req, http::response_writer& out) {
    co_await out.send(http::make_response(req, status::ok, "", "text/plain"));
}

asio::awaitable<void> api::metrics_page(http::request& req, http::response_writer& out) {
    co_await out.send(http::make_response(req, status::ok, metrics_.expose(),
                                          common::metrics::registry::content_type));
}

asio::awaitable<void> api::load(http::request& req, http::response_writer& out) {
    const load_snapshot s = engine_.load();
    const nlohmann::json j = {{"kv_usage", s.kv_usage},
                              {"running", s.running},
                              {"waiting", s.waiting},
                              {"prefix_cache_hits", s.prefix_cache_hits},
                              {"prefix_cache_queries", s.prefix_cache_queries},
                              {"num_gpu_blocks", s.num_blocks},
                              {"block_size", s.block_size},
                              {"server_load", s.running + s.waiting}};
    co_await out.send(http::make_response(req, status::ok, j.dump()));
}

asio::awaitable<void> api::models(http::request& req, http::response_writer& out) {
    // One card per served name, as vLLM lists them; root is the model directory when there is one.
    nlohmann::json data = nlohmann::json::array();
    std::vector<std::string> names = cfg_.served_model_names;
    if (names.empty())
        names.push_back(cfg_.model_name);
    for (const auto& name : names) {
        nlohmann::json model = {{"id", name},
                                {"object", "model"},
                                {"created", created_},
                                {"owned_by", "lanes"},
                                {"root", cfg_.model.empty() ? name : cfg_.model},
                                {"parent", nullptr},
                                {"max_model_len", engine_.max_sequence_tokens()}};
        // A model's tokenizer: routers hash in its ids (and can tell whether theirs is the same).
        if (const auto* t = engine_.vocab().model())
            model["lanes_tokenizer"] = t->digest();
        data.push_back(std::move(model));
    }
    const nlohmann::json j = {{"object", "list"}, {"data", std::move(data)}};
    co_await out.send(http::make_response(req, status::ok, j.dump()));
}

namespace {

// The engine's dump, handed from its thread to the session waiting for it (the pattern of
// request_stream: the timer is only touched on the session's executor).
struct dump_waiter : std::enable_shared_from_this<dump_waiter> {
    explicit dump_waiter(asio::any_io_executor ex)
        : executor(std::move(ex))
        , ready(executor) {}
    void deliver(kv_dump d) {
        std::lock_guard lock(mutex);
        got = std::move(d);
        asio::post(executor, [self = shared_from_this()] { self->ready.cancel(); });
    }
    std::optional<kv_dump> take() {
        std::lock_guard lock(mutex);
        return std::move(got);
    }
    asio::any_io_executor executor;
    asio::steady_timer ready;
    std::mutex mutex;
    std::optional<kv_dump> got;
};

} // namespace

// Every block the cache holds, as one batch of BlockStored events (msgpack, the event stream's
// form) and the sequence number the stream goes on from (lanes-kv-events-next-seq): a router
// applies the dump, then the batches from that number on.
asio::awaitable<void> api::kv_blocks(http::request& req, http::response_writer& out) {
    // Refusals are made whole before anything is awaited (no temporaries across a co_await).
    std::optional<openai::api_error> refusal;
    const std::string_view given =
        common::access::bearer_token(req[boost::beast::http::field::authorization]);
    if (!dump_token_) {
        refusal =
            openai::api_error::not_found("the block dump is off (lanes-replica --kv-dump-token)");
    } else if (given.empty() ||
               !common::access::same(common::access::sha256(given), *dump_token_)) {
        refusal = openai::api_error::of(401, "the block dump needs its bearer token");
        refusal->code = "invalid_api_key";
    }
    auto waiter = std::make_shared<dump_waiter>(co_await asio::this_coro::executor);
    std::optional<kv_dump> d;
    if (!refusal) {
        // The wait starts before the engine can answer: a wake-up posted meanwhile runs after it.
        waiter->ready.expires_after(cfg_.kv_dump_timeout);
        if (!engine_.request_kv_dump([waiter](kv_dump got) { waiter->deliver(std::move(got)); }))
            refusal = openai::api_error::of(503, "the engine is stopping or publishes no events");
    }
    if (!refusal) {
        d = waiter->take();
        if (!d) {
            co_await waiter->ready.async_wait(asio::as_tuple(asio::use_awaitable));
            d = waiter->take();
        }
        if (!d)
            refusal = openai::api_error::of(503, "the engine did not pause for the dump in time");
    }
    if (refusal) {
        http::response res = openai::error_response(req, *refusal);
        co_await out.send(std::move(res));
        co_return;
    }
    common::kv_events::batch b;
    b.ts =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    b.events = std::move(d->events);
    b.data_parallel_rank = 0;
    auto res = http::make_response(req, status::ok, common::kv_events::encode(b),
                                   "application/vnd.msgpack");
    res.set(common::kv_events::dump_next_seq_header, std::to_string(d->next_batch));
    res.set(boost::beast::http::field::cache_control, "no-store");
    co_await out.send(std::move(res));
}

std::optional<openai::api_error> api::make_engine_request(const openai::generation_request& g,
                                                          std::string_view body, bool chat,
                                                          engine_request& er) {
    er.arrival = engine_.now();
    er.id = openai::make_id(chat ? "chatcmpl-" : "cmpl-");
    prompt_ids_result prompt = prompt_ids(g, body, engine_.vocab(), std::time(nullptr));
    if (prompt.error)
        return prompt.error;
    er.prompt = std::move(prompt.ids);
    std::int64_t max_tokens = 0;
    const auto max_len = static_cast<std::int64_t>(engine_.max_sequence_tokens());
    if (auto e = check_request(cfg_, g, static_cast<std::int64_t>(er.prompt.size()), max_len,
                               defaults_, max_tokens))
        return e;
    sampling_inputs in;
    in.max_tokens = max_tokens;
    // Without a seed (or with -1, vLLM's "none") a request gets a fresh one, as in vLLM: two
    // alike requests sample apart.
    in.seed = g.seed && *g.seed != -1 ? static_cast<std::uint64_t>(*g.seed) : fresh_seed();
    in.vocab = engine_.vocab().size();
    in.has_logits = engine_.backend_name() != "sim";
    in.max_logprobs = cfg_.request_limits.max_logprobs;
    if (auto e = resolve_sampling(g, defaults_, in, er.sampling))
        return e;
    if (g.cache_salt)
        er.hash_root = common::salted_root(*g.cache_salt);
    return std::nullopt;
}

asio::awaitable<void> api::generate(http::request& req, http::response_writer& out, bool chat) {
    const auto kind = chat ? openai::endpoint::chat_completions : openai::endpoint::completions;
    openai::parse_outcome parsed =
        openai::parse_generation_request(kind, req.body(), cfg_.request_limits);
    if (parsed.error) {
        co_await send_error(req, out, *parsed.error);
        co_return;
    }
    const openai::generation_request& g = *parsed.request;
    engine_request er;
    if (auto e = make_engine_request(g, req.body(), chat, er)) {
        co_await send_error(req, out, *e);
        co_return;
    }
    const openai::response_meta meta{er.id, unix_now(), cfg_.model_name};
    auto stream = std::make_shared<request_stream>(co_await asio::this_coro::executor);
    switch (engine_.submit(std::move(er), stream)) {
    case submit_status::accepted:
        break;
    case submit_status::queue_full:
        co_await send_error(
            req, out,
            openai::api_error::of(503, "the replica's waiting queue is full; retry later"));
        co_return;
    case submit_status::stopped:
        co_await send_error(req, out, openai::api_error::of(503, "the replica is shutting down"));
        co_return;
    }
    out.on_client_closed([stream] { stream->cancel(); });
    if (g.stream)
        co_await answer_stream(out, *stream, g, meta);
    else
        co_await answer_whole(req, out, *stream, g, meta);
}

asio::awaitable<void> api::answer_whole(http::request& req, http::response_writer& out,
                                        request_stream& stream, const openai::generation_request& g,
                                        const openai::response_meta& meta) {
    std::string text;
    std::vector<openai::token_logprob> logprobs;
    stream_event ev;
    do {
        ev = co_await stream.next();
        text += ev.text;
        std::move(ev.logprobs.begin(), ev.logprobs.end(), std::back_inserter(logprobs));
    } while (!ev.finished);
    if (!ev.error.empty()) {
        co_await send_error(req, out, openai::api_error::of(500, ev.error));
        co_return;
    }
    const openai::usage u{ev.prompt_tokens, ev.completion_tokens, ev.cached_tokens};
    std::size_t offset = 0;
    const std::string logprobs_json =
        g.logprobs ? openai::logprobs_json(g.kind, logprobs, logprobs_top(g), offset) : "";
    co_await out.send(
        http::make_response(req, status::ok,
                            openai::completion_json(g.kind, meta, text, to_string(ev.finish), u,
                                                    ev.stop_reason, logprobs_json)));
}

asio::awaitable<void> api::answer_stream(http::response_writer& out, request_stream& stream,
                                         const openai::generation_request& g,
                                         const openai::response_meta& meta) {
    const bool chat = g.kind == openai::endpoint::chat_completions;
    const std::array<http::header_view, 1> stream_headers{{{"x-request-id", meta.id}}};
    bool ok = co_await out.begin_stream(status::ok, "text/event-stream", stream_headers);
    // A chat stream's role chunk goes with the first output, as vLLM sends it: before the
    // engine has run, it would make any client's time to first event meaningless.
    std::string role = chat ? http::sse_event(openai::chat_role_chunk(meta)) : std::string();
    // Each chunk carries the logprobs of its tokens; completions' offsets run on across chunks.
    std::size_t offset = 0;
    const auto logprobs_of = [&](const stream_event& e) {
        return g.logprobs && !e.logprobs.empty()
                   ? openai::logprobs_json(g.kind, e.logprobs, logprobs_top(g), offset)
                   : std::string();
    };
    stream_event ev;
    while (ok) {
        ev = co_await stream.next();
        if (ev.finished)
            break;
        ok = co_await out.write_chunk(role + http::sse_event(openai::delta_chunk(
                                                 g.kind, meta, ev.text, {}, {}, logprobs_of(ev))));
        role.clear();
    }
    if (!ok) {
        stream.cancel(); // the client is gone: free the request's resources now
        co_return;
    }
    std::string tail;
    if (!ev.error.empty()) {
        tail += http::sse_event(openai::error_json(openai::api_error::of(500, ev.error)));
    } else {
        tail += role; // no output before the last event
        tail += http::sse_event(openai::delta_chunk(g.kind, meta, ev.text, to_string(ev.finish),
                                                    ev.stop_reason, logprobs_of(ev)));
        if (g.include_usage) {
            const openai::usage u{ev.prompt_tokens, ev.completion_tokens, ev.cached_tokens};
            tail += http::sse_event(openai::usage_chunk(g.kind, meta, u));
        }
    }
    tail += http::sse_done;
    if (co_await out.write_chunk(tail))
        co_await out.end_stream();
}

} // namespace lanes::replica
