#include "common/http/session.hpp"

#include "common/allocator.hpp"
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
#include <cstring>
#include <stdexcept>

namespace lanes::common::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t first_read_size = 4096;

} // namespace

session::session(tcp::socket socket, tcp::endpoint remote, std::shared_ptr<session_context> ctx,
                 std::shared_ptr<watch_delay> watches)
    : io_(std::move(socket))
    , ctx_(std::move(ctx))
    , writer_(io_, ctx_->cfg.write_timeout, ctx_->stopping)
    , buffer_(
          std::max(ctx_->cfg.header_limit + ctx_->cfg.framing_buffer_limit + 4, first_read_size))
    , remote_(remote)
    , watch_delay_(std::move(watches)) {
    boost::system::error_code ec;
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
            drop_large_buffers();
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

        // All of it read: the read buffer is not held while the handler runs (a proxied stream
        // runs for minutes, and a proxy holds thousands of them).
        if (buffer_.size() == 0)
            buffer_.shrink_to_fit();
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
            note_status(beast_http::status::internal_server_error);
            co_await writer_.send(beast_http::status::internal_server_error, page.content_type, {},
                                  page.body);
        }
        if (ctx_->answered)
            ctx_->answered(&req_, *this);
        if (ctx_->stopping.load())
            writer_.close_after();
        if (writer_.broken() || !writer_.keep_alive())
            break;
    }
    idle_deadline_.release();
    drop_large_buffers(); // the session itself may be freed later, on another thread
    if (tls_up_ && !writer_.broken())
        co_await io_.close_tls(cfg.tls_close_timeout);
    boost::system::error_code ec;
    // A refused request's connection lingers after its FIN, so that the client reads the answer
    // before the close resets the connection over the body it is still sending. Otherwise the
    // close alone sends the FIN after what is queued, as a shutdown would.
    if (refused_ && !writer_.broken()) {
        io_.socket().shutdown(tcp::socket::shutdown_send, ec);
        if (!ec)
            co_await linger();
    }
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

void session::assign_request_id() {
    static constexpr std::string_view field = "x-request-id";
    const auto given = req_.find(field);
    if (given && acceptable_request_id(*given)) {
        reset_answer_state(std::string(*given));
    } else {
        reset_answer_state(make_request_id());
        const std::string client_value(given.value_or(""));
        req_.remove(field);
        if (!client_value.empty())
            req_.add("x-client-request-id", client_value);
        req_.add(field, request_id());
    }
    writer_.set_request_id(request_id());
}

void session::start_serving() {
    writer_.start(version_, req_.keep_alive(), req_.method() == beast_http::verb::head);
    if (ctx_->cfg.request_ids)
        assign_request_id();
    else
        reset_answer_state({});
    ctx_->active.fetch_add(1);
    LANES_LOG(debug, "http",
              "request from " << remote_ << ": " << req_.method_string() << " " << req_.target());
}

void session::drop_large_buffers() {
    const std::size_t idle_bytes = ctx_->cfg.idle_buffer_bytes;
    std::size_t largest = 0;
    if (buffer_.capacity() > idle_bytes) {
        largest = buffer_.capacity();
        buffer_.shrink_to_fit();
    }
    largest = std::max(largest, req_.release_large(idle_bytes));
    if (largest >= common::large_buffer_bytes) {
        common::return_free_memory();
        // Once more a little later on this thread.
        auto later = std::make_shared<asio::steady_timer>(io_.tcp().get_executor(),
                                                          common::return_again_after);
        later->async_wait([later](boost::system::error_code) { common::return_free_memory(); });
    }
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

asio::awaitable<void> session::refuse(int status, const std::string& message) {
    // Refused before any request was taken up: not a HEAD, and the connection closes after.
    refused_ = true;
    writer_.start(version_, false, false);
    reset_answer_state(ctx_->cfg.request_ids ? make_request_id() : std::string());
    writer_.set_request_id(request_id());
    note_refusal(status == 413   ? "body_too_large"
                 : status == 431 ? "header_too_large"
                                 : "malformed_request");
    note_status(static_cast<beast_http::status>(status));
    const error_page page = ctx_->errors(status, message);
    co_await writer_.send(static_cast<beast_http::status>(status), page.content_type, {},
                          page.body);
    if (ctx_->answered)
        ctx_->answered(nullptr, *this);
}

asio::awaitable<void> session::refuse_with(response res) {
    refused_ = true;
    writer_.start(version_, false, req_.method() == beast_http::verb::head);
    reset_answer_state(ctx_->cfg.request_ids ? make_request_id() : std::string());
    writer_.set_request_id(request_id());
    note_status(res.result());
    co_await answer(std::move(res));
    if (ctx_->answered)
        ctx_->answered(&req_, *this);
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
    if (tls_up_) {
        arm_tls_watch();
        return;
    }
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

// On TLS the raw bytes cannot say what they are: under TLS 1.3 a close_notify travels as an
// application-data record like a pipelined request. So the watch reads through the TLS session:
// it ends in eof (close_notify), a truncation or a reset when the client leaves, and with bytes
// when it pipelines its next request, which are kept for that request. The read is full-duplex
// with the answer's writes; stop_watching() cancels it as it cancels the peek.
void session::arm_tls_watch() {
    watch_armed_ = true;
    asio::co_spawn(
        io_.tcp().get_executor(),
        [self = shared_from_this(), generation = watch_generation_]() -> asio::awaitable<void> {
            auto [ec, n] = co_await self->io_.read_some_bare(asio::buffer(self->watch_tls_));
            if (generation != self->watch_generation_ || ec == asio::error::operation_aborted) {
                if (n > 0) // bytes of the next request that came with the cancellation
                    self->keep_watch_bytes(n);
                co_return; // stop_watching() ended this watch
            }
            self->watch_armed_ = false;
            if (!ec && n > 0) {
                self->keep_watch_bytes(n);
                self->on_closed_ = nullptr; // pipelined data: the client is still there
                co_return;
            }
            if (!self->on_closed_)
                co_return;
            auto callback = std::move(self->on_closed_);
            self->on_closed_ = nullptr;
            self->writer_.mark_broken();
            callback();
        },
        asio::detached);
}

void session::keep_watch_bytes(std::size_t n) {
    const auto room = buffer_.prepare(n);
    std::memcpy(room.data(), watch_tls_.data(), n);
    buffer_.commit(n);
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
