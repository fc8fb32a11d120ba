#include "router/proxy.hpp"

#include "common/block_hash.hpp"
#include "common/http_client.hpp"
#include "common/log.hpp"
#include "common/openai.hpp"
#include "common/tokenizer.hpp"
#include "router/request_view.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>
#include <nlohmann/json.hpp>

#include <chrono>

namespace lanes::router {

namespace asio = boost::asio;
namespace http = common::http;
namespace openai = common::openai;
namespace bhttp = boost::beast::http;
using clock_type = std::chrono::steady_clock;
using boost::system::error_code;

namespace {

constexpr std::string_view header_replica = "x-lanes-replica";
constexpr std::string_view header_reason = "x-lanes-route-reason";
constexpr std::string_view header_request_id = "x-request-id";

double seconds_since(clock_type::time_point t) {
    return std::chrono::duration<double>(clock_type::now() - t).count();
}

openai::api_error make_error(int status, std::string type, std::string message) {
    openai::api_error e;
    e.status = status;
    e.type = std::move(type);
    e.message = std::move(message);
    return e;
}

bool hop_by_hop(bhttp::field f) {
    switch (f) {
    case bhttp::field::connection:
    case bhttp::field::keep_alive:
    case bhttp::field::transfer_encoding:
    case bhttp::field::te:
    case bhttp::field::trailer:
    case bhttp::field::upgrade:
    case bhttp::field::host:
    case bhttp::field::content_length:
    case bhttp::field::proxy_authorization:
    case bhttp::field::proxy_authenticate:
    case bhttp::field::expect:
        return true;
    default:
        return false;
    }
}

// The session key: x-session-id header, else the body's `user`, else a `session_id` cookie.
std::optional<std::string> session_key(const http::request& req,
                                       const std::optional<std::string>& user) {
    if (auto it = req.find("x-session-id"); it != req.end() && !it->value().empty())
        return std::string(it->value());
    if (user && !user->empty())
        return *user;
    if (auto it = req.find(bhttp::field::cookie); it != req.end()) {
        const std::string_view cookies(it->value().data(), it->value().size());
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

struct proxy::routed {
    std::shared_ptr<replica> target;
    decision choice;
    std::string request_id;
    clock_type::time_point start;
};

struct proxy::attempt_result {
    bool answered = false;    // the client got a complete answer (or a cleanly ended stream)
    bool sent_any = false;    // some bytes reached the client: no retry possible
    bool client_gone = false; // the client went away meanwhile: nobody to retry for
    int status = 0;           // status relayed (or the upstream's failing status)
    std::string failure;      // why the attempt failed
    std::string failed_body;  // upstream's body on a 5xx, relayed if no retry succeeds
    std::string failed_content_type;
};

proxy::proxy(const router_config& cfg, replica_pool& pool, router_metrics& metrics,
             replica_monitor& monitor, std::unique_ptr<policy> pol)
    : cfg_(cfg)
    , pool_(pool)
    , metrics_(metrics)
    , monitor_(monitor)
    , admin_(cfg.admin_token, pool)
    , policy_(std::move(pol)) {}

asio::awaitable<void> proxy::handle(http::request& req, http::response_writer& out) {
    const std::string_view target(req.target().data(), req.target().size());
    const std::string_view path = target.substr(0, target.find('?'));
    const bool post = req.method() == bhttp::verb::post;
    const bool get = req.method() == bhttp::verb::get || req.method() == bhttp::verb::head;
    auto refuse = [&](int status, std::string type, std::string message) {
        return out.send(http::make_response(
            req, static_cast<bhttp::status>(status),
            openai::error_json(make_error(status, std::move(type), std::move(message)))));
    };
    if (path == "/v1/completions" || path == "/v1/chat/completions") {
        if (!post)
            co_await refuse(405, "MethodNotAllowed", "use POST");
        else
            co_await generate(req, out, path == "/v1/chat/completions");
    } else if (path == "/health" && get) {
        co_await out.send(http::make_response(req, bhttp::status::ok, "", "text/plain"));
    } else if (path == "/metrics" && get) {
        co_await out.send(http::make_response(req, bhttp::status::ok, metrics_.expose(pool_),
                                              common::metrics::registry::content_type));
    } else if (path == "/v1/models" && get) {
        co_await models(req, out);
    } else if (admin::handles(path)) {
        co_await admin_.handle(req, out);
    } else {
        co_await refuse(404, "NotFoundError", "no route for " + std::string(path));
    }
}

decision proxy::pick(const route_request& rr, const tried_set& tried,
                     std::vector<std::shared_ptr<replica>>& replicas) {
    const auto version = pool_.version();
    pool_snapshot snap = pool_.snapshot(replicas, clock_type::now(), cfg_.stale_after);
    std::lock_guard lock(policy_mutex_);
    if (version != seen_version_) {
        policy_->on_replicas_changed(snap);
        seen_version_ = version;
    }
    return policy_->pick(rr, snap, tried);
}

asio::awaitable<void> proxy::generate(http::request& req, http::response_writer& out, bool chat) {
    const auto start = clock_type::now();
    const auto kind = chat ? openai::endpoint::chat_completions : openai::endpoint::completions;
    std::optional<request_view> view = extract_request(kind, req.body());
    if (!view) { // unusual or invalid: the full parser decides, and names any problem
        openai::parse_outcome parsed = openai::parse_generation_request(kind, req.body());
        if (parsed.error) {
            metrics_.requests.with({"none", std::to_string(parsed.error->status), "invalid"}).inc();
            co_await out.send(http::make_response(req,
                                                  static_cast<bhttp::status>(parsed.error->status),
                                                  openai::error_json(*parsed.error)));
            co_return;
        }
        auto& g = *parsed.request;
        view = request_view{std::move(g.prompt), std::move(g.prompt_token_ids), g.model, g.user,
                            g.stream};
    }
    // Token-id prompts get the BOS the replica adds, so the hashes match what it will cache.
    auto& ids = view->prompt_token_ids;
    if (!ids.empty() && ids.front() != common::bos_token)
        ids.insert(ids.begin(), common::bos_token);
    const auto block_size = static_cast<std::size_t>(cfg_.block_size);
    const std::vector<common::block_hash> blocks =
        view->prompt_token_ids.empty() ? common::hash_prompt_blocks(view->prompt, block_size)
                                       : common::hash_blocks(view->prompt_token_ids, block_size);
    route_request rr;
    rr.blocks = blocks;
    rr.prompt_tokens =
        view->prompt_token_ids.empty() ? view->prompt.size() + 1 : view->prompt_token_ids.size();
    rr.session_key = session_key(req, view->user);
    if (view->model)
        rr.model = *view->model;

    std::string request_id;
    if (auto it = req.find(header_request_id); it != req.end() && !it->value().empty())
        request_id = std::string(it->value());
    else
        request_id = openai::make_id("req-");

    tried_set tried;
    attempt_result last;
    for (std::int64_t attempt = 0; attempt <= cfg_.max_retries; ++attempt) {
        const auto decide_start = clock_type::now();
        std::vector<std::shared_ptr<replica>> replicas;
        const decision d = pick(rr, tried, replicas);
        metrics_.decision.observe(seconds_since(decide_start));
        if (!d.replica)
            break;
        routed r{replicas[*d.replica], d, request_id, start};
        tried.push_back(r.target->id());
        if (attempt > 0)
            metrics_.retries.inc();
        {
            std::lock_guard lock(policy_mutex_);
            policy_->on_routed(rr, r.target->id());
        }
        metrics_.predicted_query_tokens.inc(static_cast<double>(rr.prompt_tokens));
        // A replica always computes the prompt's last token, so at most (tokens - 1) / block
        // size blocks can hit (vLLM's cap, which lanes replicas share).
        const std::size_t block = static_cast<std::size_t>(cfg_.block_size);
        const std::size_t cap = rr.prompt_tokens > 0 ? (rr.prompt_tokens - 1) / block : 0;
        metrics_.predicted_hit_tokens.inc(
            static_cast<double>(std::min(d.matched_blocks, cap) * block));
        last = co_await forward(req, out, r);
        {
            std::lock_guard lock(policy_mutex_);
            policy_->on_request_done(r.target->id());
        }
        const std::string code = std::to_string(last.status ? last.status : 502);
        if (last.answered || last.sent_any) {
            metrics_.requests.with({r.target->id(), code, std::string(to_string(d.reason))}).inc();
            metrics_.duration.observe(seconds_since(start));
            if (cfg_.access_log)
                LANES_LOG(info, "access",
                          request_id << " " << req.target() << " replica=" << r.target->id()
                                     << " reason=" << to_string(d.reason) << " status=" << code
                                     << " cached_blocks=" << d.matched_blocks << "/"
                                     << blocks.size() << " attempts=" << attempt + 1
                                     << " duration_ms=" << seconds_since(start) * 1000.0
                                     << (last.answered ? "" : " stream_broken"));
            co_return;
        }
        if (last.client_gone) { // closing the upstream request was the point: no retry
            LANES_LOG(debug, "proxy",
                      request_id << " client went away while " << r.target->id()
                                 << " worked on it");
            metrics_.requests.with({r.target->id(), "499", std::string(to_string(d.reason))}).inc();
            metrics_.duration.observe(seconds_since(start));
            co_return;
        }
        LANES_LOG(warn, "proxy",
                  request_id << " attempt " << attempt + 1 << " on " << r.target->id()
                             << " failed: " << last.failure);
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

// The upstream connection of one attempt, shared with the client-closed hook: if the client goes
// away while we wait, closing the upstream connection makes the replica abort the request (and
// free its KV blocks) at once. Once the connection is pooled the hook no longer sees it.
struct proxy::upstream_link {
    std::unique_ptr<http::client_connection> conn;
    bool client_gone = false;
};

asio::awaitable<proxy::attempt_result> proxy::forward(http::request& req,
                                                      http::response_writer& out, routed& r) {
    attempt_result result;
    inflight_guard guard(r.target);
    r.target->requests_total.fetch_add(1);
    auto link = std::make_shared<upstream_link>();
    out.on_client_closed([link] {
        link->client_gone = true;
        if (link->conn)
            link->conn->close();
    });
    struct unhook { // the hook must not outlive this attempt's hold on the connection
        std::shared_ptr<upstream_link> link;
        ~unhook() { link->conn.reset(); }
    } unhook_on_exit{link};

    const error_code ec = co_await send_upstream(req, r, *link);
    if (ec) {
        result.failure = (link->conn ? "upstream: " : "connect: ") + ec.message();
        result.client_gone = link->client_gone;
        if (!link->client_gone) // a client that left is not the replica's fault
            monitor_.report(r.target, false);
        co_return result;
    }
    result.status = static_cast<int>(link->conn->header().result_int());
    monitor_.report(r.target, result.status < 500);
    const std::string content_type(link->conn->header()[bhttp::field::content_type]);
    if (content_type.starts_with("text/event-stream") && result.status < 500)
        co_await relay_stream(out, r, *link, content_type, result);
    else
        co_await relay_whole(req, out, r, *link, content_type, result);
    result.client_gone = link->client_gone;
    co_return result;
}

// Sends the request and reads the response header. A pooled connection may have been closed by
// the replica meanwhile, so a failure on a reused one is retried once on a fresh connection (no
// bytes reached anyone). On a connect failure link.conn is left empty.
asio::awaitable<error_code> proxy::send_upstream(http::request& req, routed& r,
                                                 upstream_link& link) {
    auto executor = co_await asio::this_coro::executor;
    // The upstream request straight in wire format: the client's end-to-end fields in order
    // (repeats kept), our Host, request id and length; HTTP/1.1 keep-alive by default.
    const auto& address = r.target->address();
    std::string head;
    head.reserve(256 + req.target().size());
    head += req.method_string();
    head += ' ';
    head += address.base_path;
    head += req.target();
    head += " HTTP/1.1\r\nHost: ";
    head += address.authority();
    head += "\r\n";
    for (const auto& field : req) {
        if (hop_by_hop(field.name()) ||
            boost::beast::iequals(field.name_string(), header_request_id))
            continue;
        head += field.name_string();
        head += ": ";
        head += field.value();
        head += "\r\n";
    }
    head += header_request_id;
    head += ": ";
    head += r.request_id;
    head += "\r\nContent-Length: ";
    head += std::to_string(req.body().size());
    head += "\r\n\r\n";
    error_code ec;
    for (int attempt = 0; attempt < 2; ++attempt) {
        link.conn = r.target->take_idle();
        const bool reused = link.conn != nullptr;
        if (reused) {
            link.conn->rebind(executor);
        } else {
            link.conn = std::make_unique<http::client_connection>(executor);
            ec = co_await link.conn->connect(r.target->address(), cfg_.connect_timeout);
            if (ec) {
                link.conn.reset();
                co_return ec;
            }
        }
        ec = co_await link.conn->write_raw(head, req.body(), cfg_.upstream_write_timeout);
        if (!ec)
            ec = co_await link.conn->read_header(cfg_.first_byte_timeout);
        if (!ec || !reused || link.client_gone)
            break;
    }
    co_return ec;
}

// Back to the pool once the response is complete (the hook lets go of it first: once pooled,
// another request on another thread may use it).
void proxy::recycle(routed& r, upstream_link& link) {
    auto conn = std::move(link.conn);
    if (conn && conn->reusable())
        r.target->give_back(std::move(conn), static_cast<std::size_t>(cfg_.max_idle_connections));
}

http::header_list proxy::route_headers(const routed& r) const {
    return {{std::string(header_replica), r.target->id()},
            {std::string(header_reason), std::string(to_string(r.choice.reason))},
            {std::string(header_request_id), r.request_id}};
}

// A non-streamed answer (or a 5xx): read whole, bounded, then sent in one piece — so a failure
// while reading it is still retryable.
asio::awaitable<void> proxy::relay_whole(http::request& req, http::response_writer& out, routed& r,
                                         upstream_link& link, const std::string& content_type,
                                         attempt_result& result) {
    std::string body, piece;
    while (!link.conn->done()) {
        if (auto ec = co_await link.conn->read_chunk(piece, cfg_.stream_idle_timeout)) {
            result.failure = "upstream body: " + ec.message();
            co_return;
        }
        if (body.size() + piece.size() > cfg_.upstream_body_limit) {
            result.failure = "upstream body over --upstream-body-limit";
            co_return;
        }
        body += piece;
    }
    metrics_.first_byte.observe(seconds_since(r.start));
    recycle(r, link);
    if (result.status >= 500) {
        result.failure = "upstream status " + std::to_string(result.status);
        result.failed_body = std::move(body);
        result.failed_content_type = content_type;
        co_return;
    }
    http::response res = http::make_response(req, static_cast<bhttp::status>(result.status),
                                             std::move(body), content_type);
    res.set(header_replica, r.target->id());
    res.set(header_reason, to_string(r.choice.reason));
    res.set(header_request_id, r.request_id);
    result.sent_any = true;
    result.answered = co_await out.send(std::move(res));
}

// SSE: each upstream piece is relayed as soon as it arrives. After the first byte a retry is
// impossible, so a broken upstream ends the stream with an error event and [DONE].
asio::awaitable<void> proxy::relay_stream(http::response_writer& out, routed& r,
                                          upstream_link& link, const std::string& content_type,
                                          attempt_result& result) {
    result.sent_any = true;
    const http::header_list headers = route_headers(r);
    if (!co_await out.begin_stream(static_cast<bhttp::status>(result.status), content_type,
                                   headers)) {
        link.conn->close();
        co_return;
    }
    bool first = true;
    std::string piece;
    while (!link.conn->done()) {
        if (auto ec = co_await link.conn->read_chunk(piece, cfg_.stream_idle_timeout)) {
            metrics_.errors.with({"stream_broken"}).inc();
            const auto e =
                make_error(502, "BadGatewayError", "the replica's stream broke: " + ec.message());
            const std::string tail =
                openai::sse_event(openai::error_json(e)) + std::string(openai::sse_done);
            if (co_await out.write_chunk(tail))
                co_await out.end_stream();
            result.failure = "stream: " + ec.message();
            co_return;
        }
        if (first && !piece.empty()) {
            metrics_.first_byte.observe(seconds_since(r.start));
            first = false;
        }
        if (!co_await out.write_chunk(piece)) {
            link.conn->close(); // the client is gone: the replica sees the close and aborts
            result.failure = "client closed";
            co_return;
        }
    }
    result.answered = co_await out.end_stream();
    recycle(r, link);
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
