#include "common/http/client.hpp"

#include "common/http/chunked.hpp"
#include "common/http/io/read_later.hpp"
#include "common/http/io/socket_write.hpp"
#include "common/http/io/transport.hpp"
#include "common/http/tls.hpp"

#include <boost/asio.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <tuple>
#include <utility>

#include <sys/socket.h>

namespace lanes::common::http {

bool local_resource_error(const boost::system::error_code& ec) {
    namespace err = boost::asio::error;
    return ec == err::no_descriptors || ec == err::no_buffer_space || ec == err::no_memory ||
           ec == boost::system::error_code(ENFILE, boost::system::system_category()) ||
           ec == boost::system::error_code(EADDRNOTAVAIL, boost::system::system_category());
}

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
// Reads start at min_read_size and double, up to chunk_buffer_size, each time one fills what it
// was given: a stream of small events keeps a small buffer (its capacity stays with the connection
// for the whole stream, and a proxy holds thousands of them), a large body soon reads in large
// pieces.
constexpr std::size_t chunk_buffer_size = 16 * 1024;
constexpr std::size_t min_read_size = 2 * 1024;
constexpr std::uint32_t response_header_limit = 64 * 1024;
} // namespace

void client_connection::release_view() {
    buffer_.consume(std::exchange(viewed_, 0));
}

void client_connection::grow_reads(std::size_t got) {
    if (got >= read_size_ && read_size_ < chunk_buffer_size)
        read_size_ = std::min(read_size_ * 2, chunk_buffer_size);
}

client_connection::client_connection(asio::any_io_executor ex)
    : io_(std::make_unique<transport>(std::move(ex))) {}

client_connection::~client_connection() = default;

void client_connection::start_deadline(duration timeout) {
    io_->tcp().expires_never(); // the read's deadline is deadline_'s, not Beast's
    deadline_.start(io_->socket(), timeout);
}

asio::awaitable<error_code> client_connection::connect(const url& target, duration timeout) {
    target_ = target;
    const auto executor = io_->tcp().get_executor();
    deadline_.release();
    io_ = std::make_unique<transport>(executor); // a connection made again starts afresh
    open_ = false;
    error_code ec;
    // An address is connected to as it is. Only a name is looked up: asio's resolver runs each
    // lookup on a thread of its own and hands the answer back, two thread switches that a proxy
    // opening a thousand upstream connections a second (streams starting) pays on each one.
    error_code not_address;
    if (const auto address = asio::ip::make_address(target_.host, not_address); !not_address) {
        io_->tcp().expires_after(timeout);
        std::tie(ec) =
            co_await io_->tcp().async_connect(tcp::endpoint(address, target_.port), use_tuple);
    } else {
        tcp::resolver resolver(executor);
        auto [rec, results] =
            co_await resolver.async_resolve(target_.host, std::to_string(target_.port), use_tuple);
        if (rec)
            co_return rec;
        io_->tcp().expires_after(timeout);
        std::tie(ec, std::ignore) = co_await io_->tcp().async_connect(results, use_tuple);
    }
    io_->tcp().expires_never();
    if (ec)
        co_return ec;
    error_code ignored;
    io_->socket().set_option(tcp::no_delay(true), ignored);
    if (target_.tls) {
        const std::string& name = target_.tls_name.empty() ? target_.host : target_.tls_name;
        const auto tec = co_await io_->connect_tls(client_tls_context(), name, timeout);
        if (tec) {
            close();
            co_return tec;
        }
    }
    prepare_for_write_now(*io_);
    open_ = true;
    buffer_.clear();
    viewed_ = 0;
    co_return error_code{};
}

bool client_connection::is_open() const {
    return open_ && io_->socket().is_open();
}

bool client_connection::quiet() const {
    if (!is_open())
        return false;
    char byte = 0;
    const ssize_t n = ::recv(io_->socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK);
}

const asio::execution_context& client_connection::context() const {
    return asio::query(io_->tcp().get_executor(), asio::execution::context);
}

void client_connection::rebind(asio::any_io_executor ex) {
    if (io_->tcp().get_executor() == ex)
        return;
    deadline_.abandon(); // its timer belongs to the old executor
    io_->rebind(std::move(ex));
    if (!io_->socket().is_open()) {
        open_ = false;
        return;
    }
    prepare_for_write_now(*io_);
}

void client_connection::close() {
    deadline_.release();
    error_code ec;
    io_->socket().shutdown(tcp::socket::shutdown_both, ec);
    io_->socket().close(ec);
    open_ = false;
}

asio::awaitable<error_code> client_connection::write(outgoing_request& req, duration timeout) {
    if (req.find(beast_http::field::host) == req.end())
        req.set(beast_http::field::host, target_.authority());
    req.prepare_payload();
    const std::string head = serialize_header(req);
    co_return co_await write_raw(head, req.body(), timeout);
}

asio::awaitable<error_code> client_connection::write_raw(std::string_view head,
                                                         std::string_view body, duration timeout) {
    release_view();
    header_read_ = false;
    head_scanned_ = 0;
    body_done_ = false;
    head_request_ = head.starts_with("HEAD ");
    // A kept-alive connection that carried a large body starts small again.
    read_size_ = min_read_size;
    if (buffer_.size() == 0 && buffer_.capacity() > 2 * min_read_size)
        buffer_.shrink_to_fit();
    const std::array<asio::const_buffer, 2> wire{asio::buffer(head), asio::buffer(body)};
    auto w = write_now(*io_, wire.data(), wire.size());
    if (!w.done)
        w.ec = co_await write_rest(*io_, wire.data(), wire.size(), w.written, timeout);
    if (w.ec)
        open_ = false;
    co_return w.ec;
}

// Both readers work on what is already buffered and read from the socket only when that is not
// enough: a small response usually arrives whole in one read.
bool client_connection::take_buffered_header(error_code& ec) {
    ec = {};
    while (buffer_.size() > 0) {
        const std::string_view data(static_cast<const char*>(buffer_.data().data()),
                                    buffer_.size());
        const std::size_t used =
            head_.parse(data, head_request_, response_header_limit, ec, &head_scanned_);
        if (ec) {
            open_ = false;
            deadline_.stop();
            return true;
        }
        if (used == 0)
            return false;
        buffer_.consume(used);
        head_scanned_ = 0; // the next header (after an interim answer) starts unscanned
        if (head_.status() < 200 && head_.status() != 101)
            continue; // an interim answer (100 Continue, 103): the real one follows
        header_read_ = true;
        deadline_.stop();
        left_ = head_.content_length();
        decoder_ = chunk_decoder{};
        body_done_ = head_.framing() == body_framing::none ||
                     (head_.framing() == body_framing::length && left_ == 0);
        return true;
    }
    return false;
}

error_code client_connection::header_bytes_read(error_code ec, std::size_t n) {
    if (ec) {
        open_ = false;
        deadline_.stop();
        if (ec == asio::error::eof || ec == asio::error::connection_reset) {
            if (buffer_.size() != 0)
                return beast_http::error::partial_message; // the server had begun to answer
            return ec == asio::error::eof ? beast_http::error::end_of_stream : ec;
        }
        return deadline_.result(ec);
    }
    buffer_.commit(n);
    return {};
}

asio::awaitable<error_code> client_connection::read_header(duration timeout) {
    release_view();
    error_code ec;
    if (take_buffered_header(ec))
        co_return ec;
    start_deadline(timeout); // one deadline for the whole header, from its first read
    for (;;) {
        // Read right after the request went out, the answer is not there yet: start the read
        // behind the handlers already ready.
        auto [rec, n] = co_await read_some_later(*io_, buffer_.prepare(read_size_), &deadline_);
        grow_reads(n);
        if ((ec = header_bytes_read(rec, n)) || take_buffered_header(ec))
            co_return ec;
    }
}

bool client_connection::take_buffered_piece(std::string& out, error_code& ec) {
    out.clear();
    ec = {};
    while (!body_done_ && buffer_.size() > 0) {
        const std::string_view data(static_cast<const char*>(buffer_.data().data()),
                                    buffer_.size());
        switch (head_.framing()) {
        case body_framing::length: {
            const auto n = static_cast<std::size_t>(std::min<std::uint64_t>(data.size(), left_));
            out.assign(data.substr(0, n));
            buffer_.consume(n);
            left_ -= n;
            body_done_ = left_ == 0;
            return true;
        }
        case body_framing::until_close:
            out.assign(data);
            buffer_.consume(data.size());
            return true;
        case body_framing::chunked: {
            bool bad = false;
            const std::size_t used = decoder_.decode(data, out, bad);
            buffer_.consume(used);
            if (bad) {
                open_ = false;
                ec = beast_http::error::bad_chunk;
                return true;
            }
            body_done_ = decoder_.done();
            if (!out.empty() || body_done_)
                return true;
            if (used > 0 && buffer_.size() > 0)
                continue; // framing only so far: decode on
            return false;
        }
        case body_framing::none:
            return false;
        }
    }
    return body_done_;
}

asio::awaitable<error_code> client_connection::read_chunk(std::string& out, duration idle_timeout) {
    release_view();
    error_code ec;
    while (!take_buffered_piece(out, ec)) {
        deadline_.start(io_->socket(), idle_timeout); // (read_header cleared the stream's expiry)
        // Behind the ready handlers, as in read_framed_chunks.
        auto [rec, n] = co_await read_some_later(*io_, buffer_.prepare(read_size_), &deadline_);
        grow_reads(n);
        deadline_.stop();
        rec = deadline_.result(rec);
        if (rec == asio::error::eof) { // the end of a body that runs to the close, or a cut
            open_ = false;
            if (head_.framing() != body_framing::until_close)
                co_return beast_http::error::partial_message;
            body_done_ = true;
            co_return error_code{};
        }
        if (rec) {
            open_ = false;
            co_return rec;
        }
        buffer_.commit(n);
    }
    co_return ec;
}

bool client_connection::done() const {
    return header_read_ && body_done_;
}

bool client_connection::chunked() const {
    return header_read_ && head_.framing() == body_framing::chunked;
}

bool client_connection::take_buffered_chunks(std::string_view& out, error_code& ec,
                                             std::size_t max_buffered) {
    release_view();
    out = {};
    const std::string_view data(static_cast<const char*>(buffer_.data().data()), buffer_.size());
    const chunk_scan s = scan_chunks(data);
    if (s.error) {
        open_ = false;
        ec = beast_http::error::bad_chunk;
        return true;
    }
    if (s.complete > 0 || s.last) {
        out = data.substr(0, s.complete);
        viewed_ = s.consumed; // consumed at the next call (the caller's view ends there)
        body_done_ = s.last;
        return true;
    }
    if (buffer_.size() >= max_buffered) {
        open_ = false;
        ec = beast_http::error::buffer_overflow;
        return true;
    }
    return false;
}

asio::mutable_buffer client_connection::prepare_chunks_read(duration idle_timeout,
                                                            std::size_t max_buffered) {
    deadline_.start(io_->socket(), idle_timeout); // (read_header cleared the stream's expiry)
    return buffer_.prepare(std::min(read_size_, max_buffered - buffer_.size()));
}

error_code client_connection::chunk_bytes_read(error_code ec, std::size_t n) {
    grow_reads(n);
    deadline_.stop();
    ec = deadline_.result(ec);
    if (ec) {
        open_ = false;
        return ec == asio::error::eof ? beast_http::error::partial_message : ec;
    }
    buffer_.commit(n);
    return {};
}

asio::awaitable<error_code> client_connection::read_framed_chunks(std::string_view& out,
                                                                  duration idle_timeout,
                                                                  std::size_t max_buffered) {
    error_code ec;
    while (!take_buffered_chunks(out, ec, max_buffered)) {
        // Started behind the handlers already ready: a stream's next event is rarely there the
        // moment the last one was relayed, and a try on the spot would find nothing and cost a
        // receive; behind the others, it often finds the event and reads more of them at once.
        auto [rec, n] = co_await read_some_later(
            *io_, prepare_chunks_read(idle_timeout, max_buffered), &deadline_);
        if ((ec = chunk_bytes_read(rec, n)))
            co_return ec;
    }
    co_return ec;
}

bool client_connection::reusable() const {
    // Bytes past the end of the answer would be read as the next request's answer.
    return is_open() && done() && head_.keep_alive() && buffer_.size() == viewed_;
}

bool closed_while_idle(error_code ec) {
    return ec == beast_http::error::end_of_stream || ec == asio::error::connection_reset ||
           ec == asio::error::broken_pipe;
}

} // namespace lanes::common::http
