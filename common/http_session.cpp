// One client connection of the HTTP server: read requests (keep-alive, limits, deadlines), hand
// each to the handler, write whole or streamed responses, and watch for a client that leaves.
#include "common/http_session.hpp"

#include "common/head_writer.hpp"
#include "common/http_parse.hpp"
#include "common/log.hpp"
#include "common/openai.hpp"
#include "common/socket_write.hpp"

#include <array>
#include <charconv>

namespace lanes::common::http {

namespace {

constexpr std::size_t first_read_size = 4096;

std::string limit_error(int status, std::string message) {
    openai::api_error e;
    e.status = status;
    e.message = std::move(message);
    return openai::error_json(e);
}

} // namespace

// Reads and serves requests until the connection is to close. Reading and serving are written
// out here rather than as coroutines of their own: each would cost a frame and a resumption per
// request.
asio::awaitable<void> session::run() {
    const auto& cfg = st_->cfg;
    while (!st_->stopping.load()) {
        idle_ = true;
        if (buffer_.size() == 0) {
            stream_.expires_never(); // the idle deadline is idle_deadline_'s, not Beast's
            idle_deadline_.start(stream_.socket(), cfg.idle_timeout);
            auto [ec, n] = co_await stream_.socket().async_read_some(
                buffer_.prepare(first_read_size), use_tuple);
            idle_deadline_.stop();
            if (ec) {
                LANES_LOG(debug, "http",
                          "connection from " << remote_ << " closed: " << ec.message());
                break; // idle timeout, client closed, or shutdown
            }
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
            co_await st_->h(req_, *this);
        } catch (const std::exception& e) {
            failure = e.what();
        }
        if (finish_serving(failure)) {
            response res = make_response(
                req_, beast_http::status::internal_server_error,
                limit_error(500, failure.empty() ? "no response produced" : "internal error"));
            co_await send(std::move(res));
        }
        if (st_->stopping.load())
            keep_alive_ = false;
        if (broken_ || !keep_alive_)
            break;
    }
    idle_deadline_.release();
    boost::system::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.socket().close(ec);
}

// The common case, a plain request that arrived whole: read into req_ without Beast's parser.
bool session::take_plain_request() {
    const auto& cfg = st_->cfg;
    const std::string_view data(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    const std::size_t used = parse_plain_request(data, cfg.header_limit, cfg.body_limit, req_);
    if (used == 0)
        return false;
    buffer_.consume(used);
    version_ = req_.version();
    return true;
}

void session::start_serving() {
    started_ = false;
    keep_alive_ = req_.keep_alive();
    head_request_ = req_.method() == beast_http::verb::head;
    st_->active.fetch_add(1);
    LANES_LOG(debug, "http",
              "request from " << remote_ << ": " << req_.method_string() << " " << req_.target());
}

// After the handler: true when nothing was answered and a 500 must go out.
bool session::finish_serving(const std::string& failure) {
    stop_watching();
    LANES_LOG(debug, "http",
              "handled request from " << remote_ << (started_ ? "" : " (no answer)")
                                      << (broken_ ? " (connection broken)" : ""));
    st_->active.fetch_sub(1);
    if (!failure.empty()) {
        LANES_LOG(error, "http", st_->name << ": handler failed: " << failure);
        if (started_)
            broken_ = true; // a half-written response cannot be repaired: close
    }
    return !started_;
}

// Beast's parser for everything parse_plain_request leaves: a request still arriving, chunked,
// with Expect, over a limit, or malformed. A coroutine of its own, so that the parser's space is
// not part of every request's coroutine frame.
asio::awaitable<bool> session::read_with_parser() {
    const auto& cfg = st_->cfg;
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

asio::awaitable<void> session::refuse(int status, std::string message) {
    response res{static_cast<beast_http::status>(status), version_};
    res.set(beast_http::field::server, server_header);
    res.set(beast_http::field::content_type, "application/json");
    res.keep_alive(false);
    res.body() = limit_error(status, std::move(message));
    res.prepare_payload();
    keep_alive_ = false;
    head_request_ = false; // refused before any request was taken up
    co_await send(std::move(res));
}

asio::awaitable<bool> session::send(response res) {
    if (broken_)
        co_return false;
    started_ = true;
    if (!keep_alive_ || st_->stopping.load())
        res.keep_alive(false);
    keep_alive_ = res.keep_alive();
    if (res.find(beast_http::field::server) == res.end())
        res.set(beast_http::field::server, server_header);
    res.prepare_payload();
    const std::string head = serialize_header(res);
    // A HEAD answer has the GET answer's header (Content-Length included) and no body.
    const std::string_view body = head_request_ ? std::string_view{} : std::string_view(res.body());
    const std::array<asio::const_buffer, 2> wire{asio::buffer(head), asio::buffer(body)};
    std::size_t written = 0;
    if (!write_at_once(wire.data(), wire.size(), written))
        co_await write_the_rest(wire.data(), wire.size(), written);
    co_return !broken_;
}

asio::awaitable<bool> session::send(beast_http::status status, std::string_view content_type,
                                    std::span<const header_view> headers, std::string_view body) {
    if (const auto sent = send_at_once(status, content_type, headers, body))
        co_return *sent;
    co_return co_await send_rest();
}

std::optional<bool> session::send_at_once(beast_http::status status, std::string_view content_type,
                                          std::span<const header_view> headers,
                                          std::string_view body) {
    if (broken_)
        return false;
    started_ = true;
    if (st_->stopping.load())
        keep_alive_ = false;
    const std::string_view reason = beast_http::obsolete_reason(status);
    // The literals below come to under 128 bytes; each header adds ": " and CR LF.
    std::size_t bound = 128 + reason.size() + server_header.size() + content_type.size();
    for (const auto& [name, value] : headers)
        bound += name.size() + value.size() + 4;
    head_writer head(head_buffer_, bound);
    head.put(version_text(version_)).put(" ").put_number(static_cast<unsigned>(status));
    head.put(" ").put(reason).put("\r\nServer: ").put(server_header);
    head.put("\r\nContent-Type: ").put(content_type).put("\r\n");
    for (const auto& [name, value] : headers)
        head.put(name).put(": ").put(value).put("\r\n");
    head.put("Content-Length: ").put_number(body.size()).put("\r\n");
    // HTTP/1.1 keeps the connection unless told; HTTP/1.0 closes it unless told.
    if (!keep_alive_ && version_ >= 11)
        head.put("Connection: close\r\n");
    else if (keep_alive_ && version_ < 11)
        head.put("Connection: keep-alive\r\n");
    head.put("\r\n");
    if (head_request_)
        body = {};
    rest_ = {asio::buffer(head.text()), asio::buffer(body)};
    rest_written_ = 0;
    if (write_at_once(rest_.data(), rest_.size(), rest_written_))
        return !broken_;
    return std::nullopt;
}

asio::awaitable<bool> session::send_rest() {
    co_await write_the_rest(rest_.data(), rest_.size(), rest_written_);
    co_return !broken_;
}

asio::awaitable<bool> session::begin_stream(beast_http::status status,
                                            std::string_view content_type,
                                            const header_list& headers) {
    if (broken_)
        co_return false;
    started_ = true;
    beast_http::response<beast_http::empty_body> res{status, version_};
    res.set(beast_http::field::server, server_header);
    res.set(beast_http::field::content_type, content_type);
    res.set(beast_http::field::cache_control, "no-cache");
    for (const auto& [name, value] : headers)
        res.set(name, value);
    if (st_->stopping.load())
        keep_alive_ = false;
    res.keep_alive(keep_alive_);
    res.chunked(true);
    beast_http::response_serializer<beast_http::empty_body> sr{res};
    stream_.expires_after(st_->cfg.write_timeout);
    auto [ec, n] = co_await beast_http::async_write_header(stream_, sr, use_tuple);
    if (ec)
        broken_ = true;
    co_return !ec;
}

asio::awaitable<bool> session::write_chunk(std::string_view data) {
    if (broken_)
        co_return false;
    if (data.empty())
        co_return true; // an empty chunk would end the body
    // The chunk: its size in hex and CRLF, the data, CRLF.
    std::array<char, 20> size_line{};
    char* end = std::to_chars(size_line.data(), size_line.data() + 16, data.size(), 16).ptr;
    *end++ = '\r';
    *end++ = '\n';
    const std::array<asio::const_buffer, 3> wire{
        asio::buffer(size_line.data(), static_cast<std::size_t>(end - size_line.data())),
        asio::buffer(data.data(), data.size()), asio::buffer("\r\n", 2)};
    std::size_t written = 0;
    if (!write_at_once(wire.data(), wire.size(), written))
        co_await write_the_rest(wire.data(), wire.size(), written);
    co_return !broken_;
}

asio::awaitable<bool> session::write_framed(std::string_view chunks) {
    if (broken_)
        co_return false;
    if (chunks.empty())
        co_return true;
    const asio::const_buffer wire = asio::buffer(chunks.data(), chunks.size());
    std::size_t written = 0;
    if (!write_at_once(&wire, 1, written))
        co_await write_the_rest(&wire, 1, written);
    co_return !broken_;
}

asio::awaitable<bool> session::end_stream() {
    if (broken_)
        co_return false;
    const asio::const_buffer wire = asio::buffer("0\r\n\r\n", 5); // the last chunk, no trailers
    std::size_t written = 0;
    if (!write_at_once(&wire, 1, written))
        co_await write_the_rest(&wire, 1, written);
    co_return !broken_;
}

void session::on_client_closed(std::function<void()> on_closed) {
    if (buffer_.size() > 0 || broken_)
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
            self->broken_ = true;
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

bool session::write_at_once(const asio::const_buffer* wire, std::size_t count,
                            std::size_t& written) {
    const write_attempt w = write_now(stream_, wire, count);
    written = w.written;
    if (w.ec)
        broken_ = true;
    return w.done;
}

asio::awaitable<void> session::write_the_rest(const asio::const_buffer* wire, std::size_t count,
                                              std::size_t written) {
    const auto ec = co_await write_rest(stream_, wire, count, written, st_->cfg.write_timeout);
    if (ec)
        broken_ = true;
}

} // namespace lanes::common::http
