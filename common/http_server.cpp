#include "common/http_server.hpp"

#include "common/allocator.hpp"
#include "common/log.hpp"
#include "common/openai.hpp"

#include <boost/asio.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <mutex>
#include <optional>
#include <set>

namespace lanes::common::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

namespace {
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t first_read_size = 4096;
constexpr std::string_view server_header = "lanes";
} // namespace

response make_response(const request& req, beast_http::status status, std::string body,
                       std::string_view content_type) {
    response res{status, req.version()};
    res.set(beast_http::field::server, server_header);
    res.set(beast_http::field::content_type, content_type);
    res.keep_alive(req.keep_alive());
    res.body() = std::move(body);
    res.prepare_payload();
    return res;
}

namespace {

template <class Fields>
void append_fields(std::string& out, const Fields& fields) {
    for (const auto& f : fields) {
        out += f.name_string();
        out += ": ";
        out += f.value();
        out += "\r\n";
    }
    out += "\r\n";
}

std::string_view version_text(unsigned version) {
    return version == 10 ? "HTTP/1.0" : "HTTP/1.1";
}

} // namespace

std::string serialize_header(const request& req) {
    std::string out;
    out.reserve(256);
    out += req.method_string();
    out += ' ';
    out += req.target();
    out += ' ';
    out += version_text(req.version());
    out += "\r\n";
    append_fields(out, req.base());
    return out;
}

std::string serialize_header(const response& res) {
    std::string out;
    out.reserve(256);
    out += version_text(res.version());
    out += ' ';
    out += std::to_string(res.result_int());
    out += ' ';
    out += res.reason();
    out += "\r\n";
    append_fields(out, res.base());
    return out;
}

class session;

struct server::state {
    state(asio::io_context& io_, server_config cfg_, handler h_, std::string name_)
        : io(io_)
        , cfg(cfg_)
        , h(std::move(h_))
        , name(std::move(name_))
        , accept_strand(asio::make_strand(io_)) {}

    asio::io_context& io;
    server_config cfg;
    handler h;
    std::string name;
    asio::strand<asio::io_context::executor_type> accept_strand;
    std::optional<tcp::acceptor> acceptor;
    std::vector<asio::io_context*> workers; // connections go round-robin here when set
    std::size_t next_worker = 0;            // used by the accept loop only
    std::atomic<bool> stopping{false};
    std::atomic<std::size_t> active{0};
    std::atomic<std::size_t> connections{0};
    std::mutex mutex;
    std::set<std::weak_ptr<session>, std::owner_less<std::weak_ptr<session>>> sessions;
};

namespace {

std::string limit_error(int status, std::string message) {
    openai::api_error e;
    e.status = status;
    e.message = std::move(message);
    return openai::error_json(e);
}

} // namespace

class session : public response_writer, public std::enable_shared_from_this<session> {
public:
    session(tcp::socket socket, std::shared_ptr<server::state> st)
        : stream_(std::move(socket))
        , st_(std::move(st)) {
        boost::system::error_code ec;
        remote_ = stream_.socket().remote_endpoint(ec);
        // No Nagle: a streamed response is a header and then one small write per token. With
        // Nagle each small write after the first waited for the peer's (delayed) ACK of the one
        // before, which added tens of milliseconds to time to first token (as nginx, whose
        // tcp_nodelay is on by default for keep-alive connections).
        stream_.socket().set_option(tcp::no_delay(true), ec);
    }

    asio::awaitable<void> run();

    // Called (on any thread) by server::stop(): closes the connection if it waits for a request.
    void close_if_idle() {
        asio::post(stream_.get_executor(), [self = shared_from_this()] {
            if (self->idle_)
                self->stream_.cancel();
        });
    }

    asio::awaitable<bool> send(response res) override;
    asio::awaitable<bool> send(beast_http::status status, std::string_view content_type,
                               std::span<const header_view> headers,
                               std::string_view body) override;
    asio::awaitable<bool> begin_stream(beast_http::status status, std::string_view content_type,
                                       const header_list& headers) override;
    asio::awaitable<bool> write_chunk(std::string_view data) override;
    asio::awaitable<bool> write_framed(std::string_view chunks) override;
    asio::awaitable<bool> end_stream() override;
    void on_client_closed(std::function<void()> on_closed) override;
    bool started() const override { return started_; }
    const tcp::endpoint& remote() const override { return remote_; }

private:
    // Reads one request; nullopt when the connection should close (after answering any error).
    asio::awaitable<std::optional<request>> read_request();
    asio::awaitable<void> refuse(int status, std::string message);
    bool parse_buffered(beast_http::request_parser<beast_http::string_body>& parser,
                        boost::system::error_code& ec);
    asio::awaitable<void> serve(request& req);
    void stop_watching();
    void arm_watch(std::uint64_t generation);

    beast::tcp_stream stream_;
    beast::flat_buffer buffer_;
    std::shared_ptr<server::state> st_;
    tcp::endpoint remote_;
    bool idle_ = true;
    bool started_ = false;
    bool broken_ = false;
    bool keep_alive_ = true;
    bool head_request_ = false; // the request being answered is a HEAD: send no body
    unsigned version_ = 11;
    std::function<void()> on_closed_;
    std::uint64_t watch_generation_ = 0;
    char watch_byte_ = 0; // the client-closed watch peeks into it
};

asio::awaitable<void> session::run() {
    while (!st_->stopping.load()) {
        std::optional<request> req = co_await read_request();
        if (!req)
            break;
        co_await serve(*req);
        if (broken_ || !keep_alive_)
            break;
    }
    boost::system::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.socket().close(ec);
}

asio::awaitable<std::optional<request>> session::read_request() {
    const auto& cfg = st_->cfg;
    idle_ = true;
    if (buffer_.size() == 0) {
        stream_.expires_after(cfg.idle_timeout);
        auto [ec, n] =
            co_await stream_.async_read_some(buffer_.prepare(first_read_size), use_tuple);
        if (ec) {
            LANES_LOG(debug, "http", "connection from " << remote_ << " closed: " << ec.message());
            co_return std::nullopt; // idle timeout, client closed, or shutdown
        }
        buffer_.commit(n);
    }
    idle_ = false;
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
        co_return std::nullopt;
    }
    if (hec == beast_http::error::body_limit) { // a Content-Length over the limit
        co_await refuse(413,
                        "request body larger than " + std::to_string(cfg.body_limit) + " bytes");
        co_return std::nullopt;
    }
    if (hec == beast::error::timeout || hec == beast_http::error::end_of_stream) {
        LANES_LOG(debug, "http", "header from " << remote_ << " not read: " << hec.message());
        co_return std::nullopt;
    }
    if (hec) {
        co_await refuse(400, "malformed HTTP request: " + hec.message());
        co_return std::nullopt;
    }
    version_ = parser.get().version();
    if (beast::iequals(parser.get()[beast_http::field::expect], "100-continue")) {
        beast_http::response<beast_http::empty_body> cont{beast_http::status::continue_, 11};
        stream_.expires_after(cfg.write_timeout);
        auto [cec, cn] = co_await beast_http::async_write(stream_, cont, use_tuple);
        if (cec)
            co_return std::nullopt;
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
        co_return std::nullopt;
    }
    if (bec) {
        if (bec != beast::error::timeout && bec != beast_http::error::end_of_stream &&
            bec != beast_http::error::partial_message)
            co_await refuse(400, "malformed HTTP request body: " + bec.message());
        co_return std::nullopt;
    }
    co_return parser.release();
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

asio::awaitable<void> session::serve(request& req) {
    started_ = false;
    keep_alive_ = req.keep_alive();
    head_request_ = req.method() == beast_http::verb::head;
    st_->active.fetch_add(1);
    std::string failure;
    LANES_LOG(debug, "http",
              "request from " << remote_ << ": " << req.method_string() << " " << req.target());
    try {
        co_await st_->h(req, *this);
    } catch (const std::exception& e) {
        failure = e.what();
    }
    stop_watching();
    LANES_LOG(debug, "http",
              "handled request from " << remote_ << (started_ ? "" : " (no answer)")
                                      << (broken_ ? " (connection broken)" : ""));
    st_->active.fetch_sub(1);
    if (!failure.empty()) {
        LANES_LOG(error, "http", st_->name << ": handler failed: " << failure);
        if (started_) {
            broken_ = true; // a half-written response cannot be repaired: close
            co_return;
        }
    }
    if (!started_) {
        response res = make_response(
            req, beast_http::status::internal_server_error,
            limit_error(500, failure.empty() ? "no response produced" : "internal error"));
        co_await send(std::move(res));
    }
    if (st_->stopping.load())
        keep_alive_ = false;
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
    stream_.expires_after(st_->cfg.write_timeout);
    auto [ec, n] = co_await asio::async_write(stream_, wire, use_tuple);
    if (ec)
        broken_ = true;
    co_return !ec;
}

asio::awaitable<bool> session::send(beast_http::status status, std::string_view content_type,
                                    std::span<const header_view> headers, std::string_view body) {
    if (broken_)
        co_return false;
    started_ = true;
    if (st_->stopping.load())
        keep_alive_ = false;
    std::string head;
    head.reserve(256);
    head += version_text(version_);
    head += ' ';
    head += std::to_string(static_cast<unsigned>(status));
    head += ' ';
    head += beast_http::obsolete_reason(status);
    head += "\r\nServer: ";
    head += server_header;
    head += "\r\nContent-Type: ";
    head += content_type;
    head += "\r\n";
    for (const auto& [name, value] : headers) {
        head += name;
        head += ": ";
        head += value;
        head += "\r\n";
    }
    head += "Content-Length: ";
    head += std::to_string(body.size());
    head += "\r\n";
    // HTTP/1.1 keeps the connection unless told; HTTP/1.0 closes it unless told.
    if (!keep_alive_ && version_ >= 11)
        head += "Connection: close\r\n";
    else if (keep_alive_ && version_ < 11)
        head += "Connection: keep-alive\r\n";
    head += "\r\n";
    if (head_request_)
        body = {};
    const std::array<asio::const_buffer, 2> wire{asio::buffer(head), asio::buffer(body)};
    stream_.expires_after(st_->cfg.write_timeout);
    auto [ec, n] = co_await asio::async_write(stream_, wire, use_tuple);
    if (ec)
        broken_ = true;
    co_return !ec;
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
    stream_.expires_after(st_->cfg.write_timeout);
    auto [ec, n] = co_await asio::async_write(
        stream_, beast_http::make_chunk(asio::buffer(data.data(), data.size())), use_tuple);
    if (ec)
        broken_ = true;
    co_return !ec;
}

asio::awaitable<bool> session::write_framed(std::string_view chunks) {
    if (broken_)
        co_return false;
    if (chunks.empty())
        co_return true;
    stream_.expires_after(st_->cfg.write_timeout);
    auto [ec, n] =
        co_await asio::async_write(stream_, asio::buffer(chunks.data(), chunks.size()), use_tuple);
    if (ec)
        broken_ = true;
    co_return !ec;
}

asio::awaitable<bool> session::end_stream() {
    if (broken_)
        co_return false;
    stream_.expires_after(st_->cfg.write_timeout);
    auto [ec, n] = co_await asio::async_write(stream_, beast_http::make_chunk_last(), use_tuple);
    if (ec)
        broken_ = true;
    co_return !ec;
}

void session::on_client_closed(std::function<void()> on_closed) {
    if (buffer_.size() > 0 || broken_)
        return; // the client already sent more bytes: it is still there
    on_closed_ = std::move(on_closed);
    arm_watch(++watch_generation_);
}

// A receive with MSG_PEEK, pending while the handler works: it completes with 0 bytes (eof) when
// the peer closes, with an error when it resets, and with data (left in the socket, not consumed)
// when the client pipelines its next request, which means it is still there. Unlike async_wait,
// a pending read op needs no epoll_ctl to arm: the socket is registered for input once.
void session::arm_watch(std::uint64_t generation) {
    stream_.socket().async_receive(
        asio::buffer(&watch_byte_, 1), tcp::socket::message_peek,
        [self = shared_from_this(), generation](boost::system::error_code ec, std::size_t n) {
            if (generation != self->watch_generation_ || !self->on_closed_ ||
                ec == asio::error::operation_aborted)
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
    if (!on_closed_)
        return;
    on_closed_ = nullptr;
    ++watch_generation_;
    boost::system::error_code ec;
    stream_.socket().cancel(ec); // only the watch is pending here
}

namespace {

asio::awaitable<void> run_session(std::shared_ptr<session> s, std::shared_ptr<server::state> st) {
    co_await s->run();
    std::lock_guard lock(st->mutex);
    st->sessions.erase(s);
    st->connections.fetch_sub(1);
}

asio::awaitable<void> accept_loop(std::shared_ptr<server::state> st) {
    while (!st->stopping.load()) {
        // A connection on a worker (one thread per worker) needs no strand; on the shared
        // io_context its I/O is serialised by one when several threads run it.
        asio::any_io_executor target = st->io.get_executor();
        if (!st->workers.empty())
            target = st->workers[st->next_worker++ % st->workers.size()]->get_executor();
        else if (st->cfg.threads > 1)
            target = asio::make_strand(st->io);
        auto [ec, socket] = co_await st->acceptor->async_accept(target, use_tuple);
        if (ec) {
            if (ec == asio::error::operation_aborted || st->stopping.load())
                break;
            LANES_LOG(warn, "http", st->name << ": accept failed: " << ec.message());
            continue;
        }
        auto executor = socket.get_executor();
        auto s = std::make_shared<session>(std::move(socket), st);
        LANES_LOG(debug, "http", st->name << ": connection from " << s->remote());
        {
            std::lock_guard lock(st->mutex);
            st->sessions.insert(s);
            st->connections.fetch_add(1);
        }
        asio::co_spawn(executor, run_session(s, st), asio::detached);
    }
}

} // namespace

server::server(asio::io_context& io, server_config config, handler h, std::string name)
    : state_(std::make_shared<state>(io, config, std::move(h), std::move(name))) {}

server::~server() {
    stop();
}

void server::spread_over(std::vector<asio::io_context*> workers) {
    state_->workers = std::move(workers);
}

unsigned short server::listen(const std::string& host, unsigned short port) {
    auto& st = *state_;
    tcp::endpoint ep{asio::ip::make_address(host), port};
    st.acceptor.emplace(st.accept_strand);
    st.acceptor->open(ep.protocol());
    st.acceptor->set_option(asio::socket_base::reuse_address(true));
    st.acceptor->bind(ep);
    st.acceptor->listen(asio::socket_base::max_listen_connections);
    const unsigned short bound = st.acceptor->local_endpoint().port();
    const std::string shown = ep.address().is_v6() ? "[" + host + "]" : host;
    LANES_LOG(info, "http",
              st.name << " listening on http://" << shown << ":" << bound << " ("
                      << allocator_name() << ")");
    asio::co_spawn(st.accept_strand, accept_loop(state_), asio::detached);
    return bound;
}

void server::stop() {
    auto st = state_;
    if (st->stopping.exchange(true))
        return;
    asio::post(st->accept_strand, [st] {
        boost::system::error_code ec;
        if (st->acceptor)
            st->acceptor->close(ec);
    });
    std::lock_guard lock(st->mutex);
    for (const auto& weak : st->sessions)
        if (auto s = weak.lock())
            s->close_if_idle();
}

std::size_t server::active_requests() const {
    return state_->active.load();
}
std::size_t server::open_connections() const {
    return state_->connections.load();
}

} // namespace lanes::common::http
