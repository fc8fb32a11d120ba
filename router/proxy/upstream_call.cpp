#include "router/proxy/upstream_call.hpp"

#include "common/allocator.hpp"
#include "common/http/client.hpp"
#include "common/http/io/socket_write.hpp"
#include "common/http/parse.hpp"
#include "common/http/sse.hpp"
#include "common/openai/error.hpp"
#include "router/fleet/health_report.hpp"
#include "router/proxy/upstream_fields.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <optional>
#include <utility>

namespace lanes::router {

namespace asio = boost::asio;
namespace http = common::http;
namespace openai = common::openai;
namespace bhttp = boost::beast::http;
using boost::system::error_code;

// The attempt's upstream connection, shared with the client-closed hook: if the client goes away
// while we wait, closing it makes the replica abort the request. Once the connection is pooled
// (or the attempt is over) the hook no longer sees it.
struct upstream_call::link {
    std::unique_ptr<http::client_connection> conn;
    bool client_gone = false;
};

upstream_call::upstream_call(const upstream_config& cfg, router_metrics& metrics,
                             std::shared_ptr<replica> target, const decision& choice,
                             std::string_view request_id,
                             std::chrono::steady_clock::time_point start, bool capture_response_id)
    : cfg_(cfg)
    , metrics_(metrics)
    , target_(std::move(target))
    , choice_(choice)
    , request_id_(request_id)
    , start_(start)
    , capture_response_id_(capture_response_id) {}

std::string find_response_id(std::string_view text) {
    // A responses answer is {"id": "resp_...", ...}; its stream's first event carries
    // {"response": {"id": "resp_...", ...}}. The first "id" holding a resp_ id names it.
    constexpr std::string_view key = "\"id\"";
    for (std::size_t at = text.find(key); at != std::string_view::npos;
         at = text.find(key, at + key.size())) {
        std::size_t p = at + key.size();
        while (p < text.size() && (text[p] == ' ' || text[p] == ':' || text[p] == '\t'))
            ++p;
        if (p >= text.size() || text[p] != '"')
            continue;
        const std::size_t end = text.find('"', p + 1);
        if (end == std::string_view::npos)
            return {};
        const std::string_view id = text.substr(p + 1, end - p - 1);
        if (id.starts_with("resp"))
            return std::string(id);
    }
    return {};
}

asio::awaitable<attempt_result> upstream_call::run(const http::request& req,
                                                   http::response_writer& out) {
    target_->traffic.requests_total.fetch_add(1);
    auto l = std::make_shared<link>();
    out.on_client_closed([l] {
        l->client_gone = true;
        if (l->conn)
            l->conn->close();
    });
    struct unhook { // however the attempt ends, the hook must not outlive its hold on the socket
        link& l;
        ~unhook() { l.conn.reset(); }
    } unhook_on_exit{*l};

    if (const error_code ec = co_await exchange(req, *l)) {
        const bool local = http::local_resource_error(ec);
        result_.failure = (local ? "local: " : l->conn ? "upstream: " : "connect: ") + ec.message();
        result_.failed = !l->conn || local                    ? failure_class::connect
                         : ec == boost::beast::error::timeout ? failure_class::timeout
                         : http::closed_while_idle(ec)        ? failure_class::reset
                                                              : failure_class::broken;
        // Neither a client that left nor this process running out of descriptors is the
        // replica's fault.
        if (!l->client_gone && !local)
            report_health(*target_, false, metrics_);
    } else {
        const auto& head = l->conn->head();
        result_.status = head.status();
        // Backpressure (429, 503) is load, not failure: the breaker hears nothing of it.
        result_.backpressure = result_.status == 429 || result_.status == 503;
        if (result_.backpressure) {
            result_.retry_after = parse_retry_after(head.field("retry-after"));
        } else {
            const bool failed =
                result_.status == 500 || result_.status == 502 || result_.status == 504;
            report_health(*target_, !failed, metrics_);
        }
        keep_relayed_headers(head);
        const std::string content_type(head.field("content-type"));
        if (content_type.starts_with("text/event-stream") && result_.status < 500 &&
            !result_.backpressure)
            co_await relay_stream(out, *l, content_type);
        else
            co_await relay_whole(out, *l, content_type);
    }
    result_.client_gone = l->client_gone; // the hook may have run at any await
    co_return std::move(result_);
}

asio::awaitable<error_code> upstream_call::exchange(const http::request& req, link& l) {
    auto executor = co_await asio::this_coro::executor;
    // A small body travels in the head's buffer (one send(); see write_now).
    const bool body_in_head = req.body().size() <= http::copy_body_limit;
    const std::string head = upstream_head(req, target_->address().base_path, target_->authority(),
                                           request_id_, body_in_head, authorization(req));
    const std::string_view body = body_in_head ? std::string_view{} : std::string_view(req.body());
    error_code ec;
    for (int tries = 0; tries < 2; ++tries) {
        // The second try is always on a fresh connection: the pool's other idle connections
        // have sat there as long as the one that failed, and are likely closed too.
        l.conn = tries == 0 ? target_->take_idle(executor) : nullptr;
        const bool reused = l.conn != nullptr;
        if (reused) {
            l.conn->rebind(executor);
        } else {
            l.conn = std::make_unique<http::client_connection>(executor);
            ec = co_await l.conn->connect(target_->address(), cfg_.connect_timeout);
            if (ec) {
                l.conn.reset();
                co_return ec;
            }
            if (l.client_gone) // left while we connected: the hook found no socket
                co_return asio::error::operation_aborted;
        }
        ec = co_await l.conn->write_raw(head, body, cfg_.write_timeout);
        if (!ec)
            ec = co_await l.conn->read_header(cfg_.first_byte_timeout);
        // Sent again only when the replica had closed the pooled connection (nothing reached
        // it); after a timeout or part of an answer it may be working on the request.
        if (!ec || !reused || l.client_gone || !http::closed_while_idle(ec))
            co_return ec;
    }
    co_return ec;
}

// A whole answer (or a 5xx): read whole, bounded, then sent in one piece, so that a failure while
// reading it is still retryable.
asio::awaitable<void> upstream_call::relay_whole(http::response_writer& out, link& l,
                                                 const std::string& content_type) {
    std::string body, piece;
    while (!l.conn->done()) {
        if (const error_code ec = co_await l.conn->read_chunk(piece, cfg_.stream_idle_timeout)) {
            result_.failure = "upstream body: " + ec.message();
            result_.failed = failure_class::broken;
            co_return;
        }
        if (body.size() + piece.size() > cfg_.body_limit) {
            result_.failure = "upstream body over --upstream-body-limit";
            result_.failed = failure_class::broken;
            co_return;
        }
        if (body.empty())
            body.swap(piece); // the usual single piece: taken, not copied
        else
            body += piece;
    }
    first_byte();
    recycle(l);
    if (result_.status >= 500 || result_.backpressure) {
        // Kept to relay, headers and all, should no other replica answer.
        result_.failure = "upstream status " + std::to_string(result_.status);
        result_.failed =
            result_.backpressure ? failure_class::backpressure : failure_class::status_5xx;
        result_.failed_body = std::move(body);
        result_.failed_content_type = content_type;
        result_.failed_headers = relayed_list();
        co_return;
    }
    if (capture_response_id_)
        look_for_response_id(body);
    replica_done();
    const auto headers = answer_headers();
    result_.sent_any = true;
    result_.answered =
        co_await out.send(static_cast<bhttp::status>(result_.status), content_type, headers, body);
    if (body.capacity() >= common::large_buffer_bytes) {
        std::string().swap(body);
        common::return_free_memory(); // this thread may have nothing else to do for a while
    }
}

void upstream_call::keep_relayed_headers(const http::response_head& head) {
    relayed_text_.clear();
    relayed_.clear();
    const bool names_fields = head.connection_names_fields();
    for (std::size_t i = 0; i < head.field_count(); ++i) {
        const std::string_view name = head.name(i);
        if (!relayed_field(head, name, names_fields))
            continue;
        const std::string_view value = head.value(i);
        const auto at = static_cast<std::uint32_t>(relayed_text_.size());
        relayed_text_.append(name).append(value);
        relayed_.push_back({at, static_cast<std::uint32_t>(name.size()),
                            at + static_cast<std::uint32_t>(name.size()),
                            static_cast<std::uint32_t>(value.size())});
    }
}

upstream_call::header_views upstream_call::answer_headers() const {
    header_views out;
    const std::string_view text = relayed_text_;
    for (const auto& f : relayed_)
        out.emplace_back(text.substr(f.name_at, f.name_size),
                         text.substr(f.value_at, f.value_size));
    const auto route = route_headers();
    // The request id always; which replica and why only when the operator lets clients see it.
    for (std::size_t i = cfg_.route_headers ? 0 : 2; i < route.size(); ++i)
        out.push_back(route[i]);
    return out;
}

http::header_list upstream_call::relayed_list() const {
    http::header_list out;
    const std::string_view text = relayed_text_;
    for (const auto& f : relayed_)
        out.emplace_back(text.substr(f.name_at, f.name_size),
                         text.substr(f.value_at, f.value_size));
    return out;
}

std::string_view upstream_call::authorization(const http::request& req) const {
    if (cfg_.replica_authorization.empty())
        return {};
    // The replica's credentials replace the client's when asked to, and stand in for none.
    return cfg_.replace_client_auth || !req.find("authorization") ? cfg_.replica_authorization
                                                                  : std::string_view{};
}

std::array<http::header_view, 3> upstream_call::route_headers() const {
    return {{{header_replica, target_->id()},
             {header_reason, to_string(choice_.reason)},
             {header_request_id, request_id_}}};
}

void upstream_call::look_for_response_id(std::string_view text) {
    result_.response_id = find_response_id(text);
    if (!result_.response_id.empty() && response_id_hook_)
        std::exchange(response_id_hook_, nullptr)(result_.response_id);
}

void upstream_call::replica_done() {
    if (auto hook = std::exchange(replica_done_hook_, nullptr))
        hook(result_.status);
}

void upstream_call::first_byte() {
    metrics_.first_byte.observe(seconds_since(start_));
    if (auto hook = std::move(first_byte_hook_))
        hook();
}

// Back to the pool once the response is complete (the hook lets go of it first: once pooled,
// another request on another thread may use it).
void upstream_call::recycle(link& l) {
    auto conn = std::move(l.conn);
    if (conn && conn->reusable())
        target_->give_back(std::move(conn), static_cast<std::size_t>(cfg_.max_idle_connections));
}

// SSE: each upstream piece is relayed as soon as it arrives. After the first byte a retry is
// impossible, so a broken upstream ends the stream with an error event and [DONE].
asio::awaitable<void> upstream_call::end_broken_stream(http::response_writer& out, error_code ec,
                                                       bool at_event_end) {
    const auto e = openai::api_error::of(502, "the replica's stream broke: " + ec.message());
    // An event cut in the middle is ended first, so the error arrives as an event of its own
    // rather than glued to the cut one's last line. (A framed relay forwards whole chunks, and
    // the replicas send one event per chunk.)
    const std::string tail = std::string(at_event_end ? "" : "\n\n") +
                             http::sse_event(openai::error_json(e)) + std::string(http::sse_done);
    if (co_await out.write_chunk(tail))
        co_await out.end_stream();
}

asio::awaitable<void> upstream_call::relay_stream(http::response_writer& out, link& l,
                                                  const std::string& content_type) {
    result_.sent_any = true;
    const auto headers = answer_headers();
    if (!co_await out.begin_stream(static_cast<bhttp::status>(result_.status), content_type,
                                   headers)) {
        l.conn->close();
        co_return;
    }
    bool first = true;
    bool at_event_end = true; // what the client got so far ends with a whole SSE event
    std::string decoded;      // a piece read decoded (a body not chunked)
    std::string_view piece;   // the piece to relay: the upstream buffer's chunks, or `decoded`
    // A chunked upstream body (every lanes, vLLM and SGLang stream) is relayed as whole chunks,
    // byte for byte; anything else is read decoded and sent as chunks of our own.
    const bool framed = l.conn->chunked();
    while (!l.conn->done()) {
        // Until the first event, the wait is for the first token, not a pause between two: a
        // replica sends a stream's header as soon as it takes the request, and the request may
        // then queue for a while before its prefill (as the first-byte timeout allows for).
        const auto wait = first ? cfg_.first_byte_timeout : cfg_.stream_idle_timeout;
        error_code ec; // (one co_await per statement: GCC 12 mishandles them inside ?:)
        // Once the first event is through (and the response id found, where one is sought),
        // the events flow through the connection's pump, which resumes this coroutine only
        // when the client's socket is full, the stream ends or breaks.
        const bool pumped = framed && !first && l.conn->pumpable() &&
                            !(capture_response_id_ && result_.response_id.empty());
        if (pumped) {
            const auto r = co_await l.conn->pump_framed_chunks(out, wait, cfg_.body_limit);
            if (r.client_gone) {
                l.conn->close(); // the replica sees the close and aborts
                result_.failure = "client closed";
                co_return;
            }
            ec = r.ec;
            piece = r.rest; // what the pump's writes left over
        } else if (framed) {
            ec = co_await l.conn->read_framed_chunks(piece, wait, cfg_.body_limit);
        } else {
            ec = co_await l.conn->read_chunk(decoded, wait);
            piece = decoded;
        }
        if (ec) {
            if (l.client_gone) { // the hook closed the upstream: nobody to tell
                result_.failure = "client closed";
                co_return;
            }
            metrics_.errors.with({"stream_broken"}).inc();
            co_await end_broken_stream(out, ec, at_event_end);
            result_.failure = "stream: " + ec.message();
            co_return;
        }
        if (capture_response_id_ && result_.response_id.empty() && !piece.empty())
            look_for_response_id(piece);
        if (first && !piece.empty()) {
            first_byte();
            first = false;
        }
        if (l.conn->done())
            replica_done(); // the stream's end is read; the client may still be taking the rest
        bool written = false;
        if (pumped) {
            // What the client's socket did not take at once, sent as it drains.
            written = true;
            if (!piece.empty())
                written = co_await out.write_framed(piece);
        } else if (framed) {
            // Sent on the spot when the client's socket takes it (the usual case): no coroutine
            // frame for the write.
            const std::optional<std::size_t> sent = out.write_framed_now(piece);
            if (!sent)
                written = false;
            else if (*sent == piece.size())
                written = true;
            else
                written = co_await out.write_framed(piece.substr(*sent));
        } else {
            if (!piece.empty())
                at_event_end = piece.ends_with("\n\n") || piece.ends_with("\r\n\r\n");
            written = co_await out.write_chunk(piece);
        }
        if (!written) {
            l.conn->close(); // the client is gone: the replica sees the close and aborts
            result_.failure = "client closed";
            co_return;
        }
    }
    result_.answered = co_await out.end_stream();
    recycle(l);
}

} // namespace lanes::router
