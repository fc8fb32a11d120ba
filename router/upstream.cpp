// The proxy's upstream half: send a request to the chosen replica over a pooled keep-alive
// connection, then relay its answer (whole, or SSE chunk by chunk), watching for a client that
// leaves meanwhile.
#include "common/http/client.hpp"
#include "common/http/io/head_writer.hpp"
#include "common/http/parse.hpp"
#include "router/proxy_detail.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <charconv>

namespace lanes::router {

namespace asio = boost::asio;
namespace http = common::http;
namespace openai = common::openai;
namespace bhttp = boost::beast::http;
using namespace proxy_detail;
using boost::system::error_code;

namespace {

// Fields not forwarded (the router sets Host and Content-Length itself), and the request id,
// which it sets once. Compared by length first: most fields differ from all of them there.
bool not_forwarded(std::string_view name) {
    const auto is = [name](std::string_view n) { return http::field_name_is(name, n); };
    switch (name.size()) {
    case 2:
        return is("te");
    case 4:
        return is("host");
    case 6:
        return is("expect");
    case 7:
        return is("trailer") || is("upgrade");
    case 10:
        return is("connection") || is("keep-alive");
    case 12:
        return is(header_request_id);
    case 14:
        return is("content-length");
    case 17:
        return is("transfer-encoding");
    case 18:
        return is("proxy-authenticate");
    case 19:
        return is("proxy-authorization");
    default:
        return false;
    }
}

} // namespace

std::string proxy_detail::upstream_head(const http::request& req, std::string_view base_path,
                                        std::string_view authority, std::string_view request_id,
                                        bool with_body) {
    // The literals below come to under 128 bytes; each header adds ": " and CR LF.
    std::size_t bound = 128 + req.method_string().size() + base_path.size() + req.target().size() +
                        authority.size() + header_request_id.size() + request_id.size();
    for (std::size_t i = 0; i < req.field_count(); ++i)
        bound += req.name(i).size() + req.value(i).size() + 4;
    if (with_body)
        bound += req.body().size();
    std::string head;
    common::head_writer out(head, bound);
    out.put(req.method_string()).put(" ").put(base_path).put(req.target());
    out.put(" HTTP/1.1\r\nHost: ").put(authority).put("\r\n");
    for (std::size_t i = 0; i < req.field_count(); ++i) {
        const std::string_view name = req.name(i);
        if (not_forwarded(name))
            continue;
        out.put(name).put(": ").put(req.value(i)).put("\r\n");
    }
    out.put(header_request_id).put(": ").put(request_id);
    out.put("\r\nContent-Length: ").put_number(req.body().size()).put("\r\n\r\n");
    if (with_body)
        out.put(req.body());
    head.resize(out.text().size());
    return head;
}

// One attempt: send the request, read the answer's header, relay the answer. Sending and a whole
// answer's relay are written out here rather than as coroutines of their own (a frame and a
// resumption each per request); a stream goes to relay_stream.
asio::awaitable<proxy::attempt_result> proxy::forward(http::request& req,
                                                      http::response_writer& out, routed& r) {
    attempt_result result; // (the replica's in-flight count is held by generate, from the pick)
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
    // The result, with whether the client left meanwhile (the hook may have run at any await).
    const auto finished = [&result, &link] {
        result.client_gone = link->client_gone;
        return std::move(result);
    };

    // Send the request and read the response header. A pooled connection may have been closed
    // by the replica meanwhile, so a reused one that fails that way (closed_while_idle) is
    // replaced once by a fresh connection. On a connect failure link->conn is left empty.
    auto executor = co_await asio::this_coro::executor;
    // A small body travels in the head's buffer (one send(); see write_now).
    const bool body_in_head = req.body().size() <= http::copy_body_limit;
    const std::string head = upstream_head(req, r.target->address().base_path,
                                           r.target->authority(), r.request_id, body_in_head);
    const std::string_view request_body = body_in_head ? std::string_view{} : req.body();
    error_code ec;
    for (int tries = 0; tries < 2; ++tries) {
        // The second try is always on a fresh connection: the pool's other idle connections
        // have sat there as long as the one that failed, and are likely closed too.
        link->conn = tries == 0 ? r.target->take_idle() : nullptr;
        const bool reused = link->conn != nullptr;
        if (reused) {
            link->conn->rebind(executor);
        } else {
            link->conn = std::make_unique<http::client_connection>(executor);
            ec = co_await link->conn->connect(r.target->address(), cfg_.connect_timeout);
            if (ec) {
                link->conn.reset();
                break;
            }
            if (link->client_gone) { // left while we connected: the hook found no socket
                ec = asio::error::operation_aborted;
                break;
            }
        }
        const auto w = link->conn->start_write_raw(head, request_body);
        ec = w.ec;
        if (!w.done)
            ec = co_await link->conn->finish_write_raw(head, request_body, w.written,
                                                       cfg_.upstream_write_timeout);
        // The header, read here rather than in read_header's coroutine (a frame fewer).
        if (!ec && !link->conn->take_buffered_header(ec)) {
            link->conn->start_deadline(cfg_.first_byte_timeout);
            for (;;) {
                auto [rec, n] = co_await link->conn->read_more();
                if ((ec = link->conn->header_bytes_read(rec, n)) ||
                    link->conn->take_buffered_header(ec))
                    break;
            }
        }
        // Sent again only when the replica had closed the pooled connection (nothing reached
        // it); after a timeout or part of an answer it may be working on the request.
        if (!ec || !reused || link->client_gone || !http::closed_while_idle(ec))
            break;
    }
    if (ec) {
        result.failure = (link->conn ? "upstream: " : "connect: ") + ec.message();
        if (!link->client_gone) // a client that left is not the replica's fault
            monitor_.report(r.target, false);
        co_return finished();
    }
    result.status = link->conn->head().status();
    monitor_.report(r.target, result.status < 500);
    const std::string content_type(link->conn->head().field("content-type"));
    if (content_type.starts_with("text/event-stream") && result.status < 500) {
        co_await relay_stream(out, r, *link, content_type, result);
        co_return finished();
    }

    // A whole answer (or a 5xx): read whole, bounded, then sent in one piece, so that a failure
    // while reading it is still retryable. A body that came with the header needs no wait.
    std::string body, piece;
    while (!link->conn->done()) {
        if (!link->conn->take_buffered_piece(piece, ec))
            ec = co_await link->conn->read_chunk(piece, cfg_.stream_idle_timeout);
        if (ec) {
            result.failure = "upstream body: " + ec.message();
            co_return finished();
        }
        if (body.size() + piece.size() > cfg_.upstream_body_limit) {
            result.failure = "upstream body over --upstream-body-limit";
            co_return finished();
        }
        if (body.empty())
            body.swap(piece); // the usual single piece: taken, not copied
        else
            body += piece;
    }
    metrics_.first_byte.observe(seconds_since(r.start));
    recycle(r, *link);
    if (result.status >= 500) {
        result.failure = "upstream status " + std::to_string(result.status);
        result.failed_body = std::move(body);
        result.failed_content_type = content_type;
        co_return finished();
    }
    const std::array<http::header_view, 3> headers{{{header_replica, r.target->id()},
                                                    {header_reason, to_string(r.choice.reason)},
                                                    {header_request_id, r.request_id}}};
    result.sent_any = true;
    if (const auto sent = out.send_at_once(static_cast<bhttp::status>(result.status), content_type,
                                           headers, body))
        result.answered = *sent;
    else
        result.answered = co_await out.send_rest();
    co_return finished();
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
            {std::string(header_request_id), std::string(r.request_id)}};
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
    bool at_event_end = true; // what the client got so far ends with a whole SSE event
    std::string piece;
    // A chunked upstream body (every lanes, vLLM and SGLang stream) is relayed as whole chunks,
    // byte for byte; anything else is read decoded and sent as chunks of our own.
    const bool framed = link.conn->chunked();
    while (!link.conn->done()) {
        // Until the first event, the wait is for the first token, not a pause between two: a
        // replica sends a stream's header as soon as it takes the request, and the request may
        // then queue for a while before its prefill (as the first-byte timeout allows for).
        const auto wait = first ? cfg_.first_byte_timeout : cfg_.stream_idle_timeout;
        error_code ec;
        if (framed)
            ec = co_await link.conn->read_framed_chunks(piece, wait, cfg_.upstream_body_limit);
        else
            ec = co_await link.conn->read_chunk(piece, wait);
        if (ec) {
            if (link.client_gone) { // the hook closed the upstream: nobody to tell
                result.failure = "client closed";
                co_return;
            }
            metrics_.errors.with({"stream_broken"}).inc();
            const auto e =
                make_error(502, "BadGatewayError", "the replica's stream broke: " + ec.message());
            // An event cut in the middle is ended first, so the error arrives as an event of
            // its own rather than glued to the cut one's last line. (A framed relay forwards
            // whole chunks, and the replicas send one event per chunk.)
            const std::string tail = std::string(at_event_end ? "" : "\n\n") +
                                     openai::sse_event(openai::error_json(e)) +
                                     std::string(openai::sse_done);
            if (co_await out.write_chunk(tail))
                co_await out.end_stream();
            result.failure = "stream: " + ec.message();
            co_return;
        }
        if (first && !piece.empty()) {
            metrics_.first_byte.observe(seconds_since(r.start));
            first = false;
        }
        bool written = false;
        if (framed) {
            written = co_await out.write_framed(piece);
        } else {
            if (!piece.empty())
                at_event_end = piece.ends_with("\n\n") || piece.ends_with("\r\n\r\n");
            written = co_await out.write_chunk(piece);
        }
        if (!written) {
            link.conn->close(); // the client is gone: the replica sees the close and aborts
            result.failure = "client closed";
            co_return;
        }
    }
    result.answered = co_await out.end_stream();
    recycle(r, link);
}

} // namespace lanes::router
