#include "common/http/session.hpp"

#include "common/http/io/read_later.hpp"
#include "common/http/io/socket_write.hpp"
#include "common/http/parse.hpp"
#include "common/log.hpp"

#include <boost/asio.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <array>
#include <stdexcept>

namespace lanes::common::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t first_read_size = 4096;
// A connection's buffers above this are released when it waits for its next request.

// Obsolete line folding (a field line that starts with a space or tab) in a header's raw bytes.
bool has_obs_fold(std::string_view header) {
    for (auto at = header.find("\r\n"); at != std::string_view::npos && at + 2 < header.size();
         at = header.find("\r\n", at + 2))
        if (header[at + 2] == ' ' || header[at + 2] == '\t')
            return true;
    return false;
}

// What makes a parsed header's framing or Host ambiguous (RFC 9112, 3.2 and 6.1-6.3); "" when
// nothing does. `chunked`: Beast's reading that chunked is the last transfer coding.
std::string framing_problem(const beast_http::request_header<>& h, bool chunked) {
    const bool te = h.count(beast_http::field::transfer_encoding) > 0;
    if (te && h.version() < 11)
        return "Transfer-Encoding in an HTTP/1.0 request";
    if (te && !chunked)
        return "Transfer-Encoding must end with chunked";
    if (te && h.count(beast_http::field::content_length) > 0)
        return "both Transfer-Encoding and Content-Length";
    const std::string_view target(h.target().data(), h.target().size());
    const bool origin_form = target.starts_with('/');
    const bool absolute_form = target.starts_with("http://") || target.starts_with("https://");
    const bool asterisk_form = target == "*" && h.method() == beast_http::verb::options;
    if (!origin_form && !absolute_form && !asterisk_form)
        return "the request target is neither a path nor an absolute URL";
    const auto hosts = h.count(beast_http::field::host);
    if (hosts > 1)
        return "more than one Host field";
    if (hosts == 0 && h.version() >= 11)
        return "no Host field";
    return {};
}

} // namespace

session::session(tcp::socket socket, std::shared_ptr<session_context> ctx,
                 std::shared_ptr<watch_delay> watches)
    : io_(std::move(socket))
    , ctx_(std::move(ctx))
    , writer_(io_, ctx_->cfg.write_timeout, ctx_->stopping)
    , buffer_(
          std::max(ctx_->cfg.header_limit + ctx_->cfg.framing_buffer_limit + 4, first_read_size))
    , watch_delay_(std::move(watches)) {
    boost::system::error_code ec;
    remote_ = io_.socket().remote_endpoint(ec);
    // No Nagle: a streamed response is a header and then one small write per token. With Nagle
    // each small write after the first waited for the peer's (delayed) ACK of the one before,
    // which added tens of milliseconds to time to first token (as nginx, whose tcp_nodelay is on
    // by default for keep-alive connections).
    io_.socket().set_option(tcp::no_delay(true), ec);
    prepare_for_write_now(io_);
}

session::~session() {
    if (watch_delay_)
        watch_delay_->remove(*this); // an unfinished handler's, at shutdown
}

void session::close_if_idle() {
    asio::post(io_.tcp().get_executor(), [self = shared_from_this()] {
        if (self->idle_) {
            boost::system::error_code ignored;
            self->io_.socket().close(ignored);
        }
    });
}

// Reads and serves requests until the connection is to close.
asio::awaitable<void> session::run() {
    const auto& cfg = ctx_->cfg;
    bool started = true;
    if (ctx_->tls)
        started = co_await start_tls();
    while (started && !ctx_->stopping.load()) {
        idle_ = true;
        if (buffer_.size() == 0) {
            // A big request's buffers are not kept while the connection waits for the next.
            if (buffer_.capacity() > cfg.idle_buffer_bytes)
                buffer_.shrink_to_fit();
            req_.release_large(cfg.idle_buffer_bytes);
            io_.tcp().expires_never(); // the idle deadline is idle_deadline_'s, not Beast's
            idle_deadline_.start(io_.socket(), cfg.idle_timeout);
            // Right after an answer, the next request is seldom there yet: start the read later.
            auto [ec, n] =
                co_await read_some_later(io_, buffer_.prepare(first_read_size), &idle_deadline_);
            idle_deadline_.stop();
            if (ec) {
                LANES_LOG(debug, "http",
                          "connection from " << remote_ << " closed: " << ec.message());
                break; // idle timeout, client closed, or shutdown
            }
            if (!io_.socket().is_open())
                break; // closed by server::stop() after the bytes came: as if just before
            buffer_.commit(n);
        }
        idle_ = false;
        if (!take_plain_request()) {
            const bool got = co_await read_with_parser();
            if (!got)
                break;
        }

        start_serving();
        std::string failure;
        try {
            co_await ctx_->h(req_, *this);
        } catch (const std::exception& e) {
            failure = e.what();
        }
        if (finish_serving(failure)) {
            const error_page page =
                ctx_->errors(500, failure.empty() ? "no response produced" : "internal error");
            co_await writer_.send(beast_http::status::internal_server_error, page.content_type, {},
                                  page.body);
        }
        if (ctx_->stopping.load())
            writer_.close_after();
        if (writer_.broken() || !writer_.keep_alive())
            break;
    }
    idle_deadline_.release();
    if (tls_up_ && !writer_.broken())
        co_await io_.close_tls(cfg.tls_close_timeout);
    boost::system::error_code ec;
    io_.socket().shutdown(tcp::socket::shutdown_send, ec);
    if (refused_ && !ec && !writer_.broken())
        co_await linger();
    io_.socket().close(ec);
}

// The first bytes tell a TLS ClientHello (a handshake record, 0x16) from plain HTTP, which gets a
// plain-text 400 (as nginx answers it) rather than a failed handshake its client cannot read.
asio::awaitable<bool> session::start_tls() {
    const auto& cfg = ctx_->cfg;
    io_.tcp().expires_after(cfg.tls_handshake_timeout);
    auto [ec, n] = co_await io_.tcp().async_read_some(buffer_.prepare(first_read_size), use_tuple);
    io_.tcp().expires_never();
    if (ec)
        co_return false; // closed or timed out before saying anything
    buffer_.commit(n);
    if (*static_cast<const unsigned char*>(buffer_.data().data()) != 0x16) {
        LANES_LOG(debug, "http", "plain HTTP from " << remote_ << " on a TLS port");
        co_await refuse(400, "this port speaks TLS: send the request with https://");
        co_return false;
    }
    const auto hec =
        co_await io_.accept_tls(ctx_->tls->current(), buffer_.data(), cfg.tls_handshake_timeout);
    buffer_.consume(buffer_.size());
    if (hec) {
        LANES_LOG(debug, "http", "TLS handshake with " << remote_ << " failed: " << hec.message());
        co_return false;
    }
    tls_up_ = true;
    co_return true;
}

asio::awaitable<void> session::linger() {
    const auto& cfg = ctx_->cfg;
    if (cfg.lingering_timeout.count() == 0)
        co_return;
    buffer_.consume(buffer_.size());
    io_.tcp().expires_after(cfg.lingering_timeout);
    std::size_t dropped = 0;
    while (dropped < cfg.lingering_bytes && !ctx_->stopping.load()) {
        auto [ec, n] = co_await io_.read_some(
            buffer_.prepare(std::min<std::size_t>(buffer_.max_size(), 16384)));
        if (ec)
            break; // the client closed, or the time is up
        dropped += n;
    }
    buffer_.consume(buffer_.size());
}

// The common case, a plain request that arrived whole: read into req_ without Beast's parser.
bool session::take_plain_request() {
    const auto& cfg = ctx_->cfg;
    const std::string_view data(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    const std::size_t used = parse_plain_request(data, cfg.header_limit, cfg.body_limit, req_);
    if (used == 0)
        return false;
    buffer_.consume(used);
    version_ = req_.version();
    return true;
}

void session::start_serving() {
    writer_.start(version_, req_.keep_alive(), req_.method() == beast_http::verb::head);
    ctx_->active.fetch_add(1);
    LANES_LOG(debug, "http",
              "request from " << remote_ << ": " << req_.method_string() << " " << req_.target());
}

// After the handler: true when nothing was answered and a 500 must go out.
bool session::finish_serving(const std::string& failure) {
    stop_watching();
    LANES_LOG(debug, "http",
              "handled request from " << remote_ << (writer_.started() ? "" : " (no answer)")
                                      << (writer_.broken() ? " (connection broken)" : ""));
    ctx_->active.fetch_sub(1);
    if (!failure.empty()) {
        LANES_LOG(error, "http", ctx_->name << ": handler failed: " << failure);
        if (writer_.started())
            writer_.mark_broken(); // a half-written response cannot be repaired: close
    }
    return !writer_.started();
}

// Beast's parser for everything parse_plain_request leaves: a request still arriving, chunked,
// with Expect, over a limit, or malformed. Stricter than Beast alone (RFC 9112, as HAProxy is):
// obsolete line folding, a Transfer-Encoding that does not end in chunked, one next to a
// Content-Length or in an HTTP/1.0 request, and a missing or repeated Host are refused; the
// body limit counts the bytes on the wire (chunk framing included); chunk extensions and the
// bytes buffered at once are bounded; trailers are read and dropped, never taken as fields. A
// coroutine of its own, so that the parser's space is not part of every request's frame.
asio::awaitable<bool> session::read_with_parser() {
    const auto& cfg = ctx_->cfg;
    io_.tcp().expires_after(cfg.header_read_timeout);
    const header_read got = co_await read_header_bytes();
    if (got == header_read::too_large) {
        co_await refuse(431, "request header fields too large");
        co_return false;
    }
    if (got == header_read::bare_lf) {
        co_await refuse(400, "malformed HTTP request: a line ends in LF without CR");
        co_return false;
    }
    if (got != header_read::complete)
        co_return false; // timed out or closed before the header was all there
    const std::string_view raw(static_cast<const char*>(buffer_.data().data()), header_bytes_);
    if (has_obs_fold(raw)) {
        co_await refuse(400, "malformed HTTP request: obsolete line folding");
        co_return false;
    }
    beast_http::request_parser<beast_http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(cfg.header_limit));
    parser.body_limit(cfg.body_limit);
    parser.eager(true);
    bool long_extension = false;
    auto on_chunk = [&long_extension, limit = cfg.chunk_extension_limit](
                        std::uint64_t, std::string_view extensions, boost::system::error_code& ec) {
        if (extensions.size() > limit) {
            long_extension = true;
            ec = beast_http::error::bad_chunk_extension;
        }
    };
    parser.on_chunk_header(on_chunk);
    // Beast throws (std::length_error) for a field over 65535 bytes, which a trailer can be:
    // that is a malformed request like any other, not the end of the session.
    const auto put = [&parser](asio::const_buffer bytes, boost::system::error_code& ec) {
        try {
            return parser.put(bytes, ec);
        } catch (const std::length_error&) {
            ec = beast_http::error::header_limit;
            return std::size_t{0};
        }
    };
    boost::system::error_code hec;
    const std::size_t used = put(asio::buffer(raw.data(), raw.size()), hec);
    if (!hec && (used != raw.size() || !parser.is_header_done()))
        hec = beast_http::error::bad_version;   // (the header is all there: Beast takes it whole)
    if (hec == beast_http::error::body_limit) { // a Content-Length over the limit
        co_await refuse(413,
                        "request body larger than " + std::to_string(cfg.body_limit) + " bytes");
        co_return false;
    }
    if (hec) {
        co_await refuse(400, "malformed HTTP request: " + hec.message());
        co_return false;
    }
    buffer_.consume(used);
    const auto& msg = parser.get();
    version_ = msg.version();
    if (const auto problem = framing_problem(msg, parser.chunked()); !problem.empty()) {
        co_await refuse(400, "malformed HTTP request: " + problem);
        co_return false;
    }
    // The header's fields, taken now: fields that come later (trailers) are never merged in.
    const auto sv = [](auto s) { return std::string_view(s.data(), s.size()); };
    req_.start(msg.method(), sv(msg.method_string()), sv(msg.target()), msg.version(), 256);
    for (const auto& f : msg)
        req_.add(sv(f.name_string()), sv(f.value()));
    if (version_ >= 11 && beast::iequals(msg[beast_http::field::expect], "100-continue") &&
        !parser.is_done()) {
        static constexpr std::string_view cont = "HTTP/1.1 100 Continue\r\n\r\n";
        const std::array<asio::const_buffer, 1> wire{asio::buffer(cont)};
        auto [cec, cn] = co_await io_.write(wire, cfg.write_timeout);
        if (cec)
            co_return false;
    }
    io_.tcp().expires_after(cfg.body_read_timeout);
    std::size_t wire = 0; // body bytes read, framing included
    while (!parser.is_done()) {
        boost::system::error_code bec;
        if (buffer_.size() > 0) {
            const std::size_t n = put(buffer_.data(), bec);
            buffer_.consume(n);
            wire += n;
            if (bec == beast_http::error::need_more)
                bec = {};
        }
        if (!bec && wire > cfg.body_limit)
            bec = beast_http::error::body_limit;
        if (bec == beast_http::error::body_limit) {
            co_await refuse(413, "request body larger than " + std::to_string(cfg.body_limit) +
                                     " bytes");
            co_return false;
        }
        if (bec) {
            // Worded before the co_await: GCC 12 destroys the temporaries of a ?: inside a
            // co_await expression twice.
            const std::string why = long_extension
                                        ? "chunk extensions longer than " +
                                              std::to_string(cfg.chunk_extension_limit) + " bytes"
                                        : "malformed HTTP request body: " + bec.message();
            co_await refuse(400, why);
            co_return false;
        }
        if (parser.is_done())
            break;
        if (buffer_.size() >= buffer_.max_size()) { // a chunk line or trailers past the bound
            co_await refuse(400, "chunk header or trailer section longer than " +
                                     std::to_string(buffer_.max_size()) + " bytes");
            co_return false;
        }
        const std::size_t room = std::min<std::size_t>(buffer_.max_size() - buffer_.size(), 65536);
        auto [ec, n] = co_await io_.read_some(buffer_.prepare(room));
        if (ec) {
            LANES_LOG(debug, "http", "body from " << remote_ << " not read: " << ec.message());
            co_return false; // timed out, or the client went away mid-body
        }
        buffer_.commit(n);
    }
    req_.body() = std::move(parser.get().body());
    co_return true;
}

// Reads until buffer_ holds the whole header (its end found within the header limit), leading
// empty lines dropped; header_bytes_ is then its length.
asio::awaitable<session::header_read> session::read_header_bytes() {
    const std::size_t limit = ctx_->cfg.header_limit;
    std::size_t searched = 0;
    std::size_t checked = 0; // bytes looked at for a bare LF
    for (;;) {
        std::string_view data(static_cast<const char*>(buffer_.data().data()), buffer_.size());
        std::size_t skip = 0; // empty lines before the request line (RFC 9112, 2.2)
        while (data.substr(skip).starts_with("\r\n"))
            skip += 2;
        if (skip > 0) {
            buffer_.consume(skip);
            data.remove_prefix(skip);
            searched = checked = 0;
        }
        const auto end = data.find("\r\n\r\n", searched);
        // A bare LF ends no line here (RFC 9112 lets a server refuse it): a peer that took it
        // for one would read a different header from the same bytes.
        const std::size_t scanned = end == std::string_view::npos ? data.size() : end + 4;
        for (auto lf = data.find('\n', checked); lf < scanned; lf = data.find('\n', lf + 1))
            if (lf == 0 || data[lf - 1] != '\r')
                co_return header_read::bare_lf;
        checked = scanned;
        if (end != std::string_view::npos) {
            header_bytes_ = end + 4;
            co_return header_bytes_ > limit ? header_read::too_large : header_read::complete;
        }
        if (data.size() > limit)
            co_return header_read::too_large;
        searched = data.size() > 3 ? data.size() - 3 : 0;
        const std::size_t room = std::min<std::size_t>(limit + 4 - data.size(), 16384);
        auto [ec, n] = co_await io_.read_some(buffer_.prepare(room));
        if (ec) {
            LANES_LOG(debug, "http", "header from " << remote_ << " not read: " << ec.message());
            co_return header_read::closed;
        }
        buffer_.commit(n);
    }
}

asio::awaitable<void> session::refuse(int status, const std::string& message) {
    // Refused before any request was taken up: not a HEAD, and the connection closes after.
    refused_ = true;
    writer_.start(version_, false, false);
    const error_page page = ctx_->errors(status, message);
    co_await writer_.send(static_cast<beast_http::status>(status), page.content_type, {},
                          page.body);
}

void session::on_client_closed(std::function<void()> on_closed) {
    if (buffer_.size() > 0 || writer_.broken())
        return; // the client already sent more bytes: it is still there
    on_closed_ = std::move(on_closed);
    if (watch_wanted_)
        return; // a later attempt of the same request: the watch in place serves it
    watch_wanted_ = true;
    if (watch_delay_)
        watch_delay_->add(*this);
    else
        arm_watch();
}

// On the io_context's thread, from the watch delay's tick (this session is out of its list).
void session::watch_now() {
    auto self = weak_from_this().lock();
    if (!self)
        return; // going away
    asio::dispatch(io_.tcp().get_executor(), [self] {
        if (self->watch_wanted_ && !self->watch_armed_)
            self->arm_watch();
    });
}

// A receive with MSG_PEEK, pending while the handler works: it completes with 0 bytes (eof) when
// the peer closes, with an error when it resets, and with data (left in the socket, not consumed)
// when the client pipelines its next request, which means it is still there. On a TLS connection
// it peeks at the records under the TLS session. Unlike async_wait,
// a pending read op needs no epoll_ctl to arm: the socket is registered for input once.
void session::arm_watch() {
    watch_armed_ = true;
    io_.socket().async_receive(
        asio::buffer(&watch_byte_, 1), tcp::socket::message_peek,
        [self = shared_from_this(), generation = watch_generation_](boost::system::error_code ec,
                                                                    std::size_t n) {
            if (generation != self->watch_generation_ || ec == asio::error::operation_aborted)
                return; // stop_watching() ended this watch
            self->watch_armed_ = false;
            if (!self->on_closed_)
                return;
            // On TLS the peeked byte starts a record: an alert (21) is the client's close_notify
            // or a fatal error, either way its leaving; anything else is its next request.
            const bool alert = self->tls_up_ && static_cast<unsigned char>(self->watch_byte_) == 21;
            if (!ec && n > 0 && !alert) {
                self->on_closed_ = nullptr; // pipelined data: the client is still there
                return;
            }
            auto callback = std::move(self->on_closed_); // eof (orderly close) or a reset
            self->on_closed_ = nullptr;
            self->writer_.mark_broken();
            callback();
        });
}

void session::stop_watching() {
    if (!watch_wanted_)
        return;
    watch_wanted_ = false;
    on_closed_ = nullptr;
    ++watch_generation_;
    if (watch_delay_)
        watch_delay_->remove(*this);
    if (watch_armed_) {
        watch_armed_ = false;
        boost::system::error_code ec;
        io_.socket().cancel(ec); // only the watch is pending here
    }
}

} // namespace lanes::common::http
