#include "common/http/session.hpp"

#include "common/http/io/read_later.hpp"
#include "common/http/io/socket_write.hpp"
#include "common/http/parse.hpp"
#include "common/log.hpp"

#include <boost/asio.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

namespace lanes::common::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t first_read_size = 4096;

} // namespace

session::session(tcp::socket socket, std::shared_ptr<session_context> ctx,
                 std::shared_ptr<watch_delay> watches)
    : stream_(std::move(socket))
    , ctx_(std::move(ctx))
    , writer_(stream_, ctx_->cfg.write_timeout, ctx_->stopping)
    , watch_delay_(std::move(watches)) {
    boost::system::error_code ec;
    remote_ = stream_.socket().remote_endpoint(ec);
    // No Nagle: a streamed response is a header and then one small write per token. With Nagle
    // each small write after the first waited for the peer's (delayed) ACK of the one before,
    // which added tens of milliseconds to time to first token (as nginx, whose tcp_nodelay is on
    // by default for keep-alive connections).
    stream_.socket().set_option(tcp::no_delay(true), ec);
    prepare_for_write_now(stream_);
}

session::~session() {
    if (watch_delay_)
        watch_delay_->remove(*this); // an unfinished handler's, at shutdown
}

void session::close_if_idle() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
        if (self->idle_) {
            boost::system::error_code ignored;
            self->stream_.socket().close(ignored);
        }
    });
}

// Reads and serves requests until the connection is to close.
asio::awaitable<void> session::run() {
    const auto& cfg = ctx_->cfg;
    while (!ctx_->stopping.load()) {
        idle_ = true;
        if (buffer_.size() == 0) {
            stream_.expires_never(); // the idle deadline is idle_deadline_'s, not Beast's
            idle_deadline_.start(stream_.socket(), cfg.idle_timeout);
            // Right after an answer, the next request is seldom there yet: start the read later.
            auto [ec, n] = co_await read_some_later(
                stream_.socket(), buffer_.prepare(first_read_size), &idle_deadline_);
            idle_deadline_.stop();
            if (ec) {
                LANES_LOG(debug, "http",
                          "connection from " << remote_ << " closed: " << ec.message());
                break; // idle timeout, client closed, or shutdown
            }
            if (!stream_.socket().is_open())
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
    boost::system::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.socket().close(ec);
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
// with Expect, over a limit, or malformed. A coroutine of its own, so that the parser's space is
// not part of every request's coroutine frame.
asio::awaitable<bool> session::read_with_parser() {
    const auto& cfg = ctx_->cfg;
    beast_http::request_parser<beast_http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(cfg.header_limit));
    parser.body_limit(cfg.body_limit);
    stream_.expires_after(cfg.header_read_timeout);
    boost::system::error_code hec;
    if (!parse_buffered(parser, hec)) {
        auto [ec, n] = co_await beast_http::async_read_header(stream_, buffer_, parser, use_tuple);
        hec = ec;
    }
    if (hec == beast_http::error::header_limit) {
        co_await refuse(431, "request header fields too large");
        co_return false;
    }
    if (hec == beast_http::error::body_limit) { // a Content-Length over the limit
        co_await refuse(413,
                        "request body larger than " + std::to_string(cfg.body_limit) + " bytes");
        co_return false;
    }
    if (hec == beast::error::timeout || hec == beast_http::error::end_of_stream) {
        LANES_LOG(debug, "http", "header from " << remote_ << " not read: " << hec.message());
        co_return false;
    }
    if (hec) {
        co_await refuse(400, "malformed HTTP request: " + hec.message());
        co_return false;
    }
    version_ = parser.get().version();
    if (beast::iequals(parser.get()[beast_http::field::expect], "100-continue")) {
        beast_http::response<beast_http::empty_body> cont{beast_http::status::continue_, 11};
        stream_.expires_after(cfg.write_timeout);
        auto [cec, cn] = co_await beast_http::async_write(stream_, cont, use_tuple);
        if (cec)
            co_return false;
    }
    stream_.expires_after(cfg.body_read_timeout);
    boost::system::error_code bec;
    if (!parser.is_done() && !parse_buffered(parser, bec)) {
        auto [ec, n] = co_await beast_http::async_read(stream_, buffer_, parser, use_tuple);
        bec = ec;
    }
    if (bec == beast_http::error::body_limit) {
        co_await refuse(413,
                        "request body larger than " + std::to_string(cfg.body_limit) + " bytes");
        co_return false;
    }
    if (bec) {
        if (bec != beast::error::timeout && bec != beast_http::error::end_of_stream &&
            bec != beast_http::error::partial_message)
            co_await refuse(400, "malformed HTTP request body: " + bec.message());
        co_return false;
    }
    // Into the server's own request type, as the plain path makes it.
    auto msg = parser.release();
    const auto sv = [](auto s) { return std::string_view(s.data(), s.size()); };
    req_.start(msg.method(), sv(msg.method_string()), sv(msg.target()), msg.version(), 256);
    for (const auto& f : msg)
        req_.add(sv(f.name_string()), sv(f.value()));
    req_.body() = std::move(msg.body());
    co_return true;
}

// Feeds what is already buffered to the parser, with no I/O and no asynchronous operation: a
// small request usually arrives whole in the first read. True when that settled the step (its
// header, or its whole body) or failed it (`ec`); false when more bytes must be read.
bool session::parse_buffered(beast_http::request_parser<beast_http::string_body>& parser,
                             boost::system::error_code& ec) {
    const bool header = !parser.is_header_done();
    while (buffer_.size() > 0) {
        const std::size_t used = parser.put(buffer_.data(), ec);
        buffer_.consume(used);
        if (ec == beast_http::error::need_more) {
            ec = {};
            return false;
        }
        if (ec || parser.is_done() || (header && parser.is_header_done()))
            return true;
        if (used == 0)
            return false;
    }
    return false;
}

asio::awaitable<void> session::refuse(int status, const std::string& message) {
    // Refused before any request was taken up: not a HEAD, and the connection closes after.
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
    asio::dispatch(stream_.get_executor(), [self] {
        if (self->watch_wanted_ && !self->watch_armed_)
            self->arm_watch();
    });
}

// A receive with MSG_PEEK, pending while the handler works: it completes with 0 bytes (eof) when
// the peer closes, with an error when it resets, and with data (left in the socket, not consumed)
// when the client pipelines its next request, which means it is still there. Unlike async_wait,
// a pending read op needs no epoll_ctl to arm: the socket is registered for input once.
void session::arm_watch() {
    watch_armed_ = true;
    stream_.socket().async_receive(
        asio::buffer(&watch_byte_, 1), tcp::socket::message_peek,
        [self = shared_from_this(), generation = watch_generation_](boost::system::error_code ec,
                                                                    std::size_t n) {
            if (generation != self->watch_generation_ || ec == asio::error::operation_aborted)
                return; // stop_watching() ended this watch
            self->watch_armed_ = false;
            if (!self->on_closed_)
                return;
            if (!ec && n > 0) {
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
        stream_.socket().cancel(ec); // only the watch is pending here
    }
}

} // namespace lanes::common::http
