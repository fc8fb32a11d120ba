#include "common/http/io/transport.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/bind_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/ssl/ssl_stream.hpp>

#include <openssl/ssl.h>
#include <openssl/x509v3.h>

namespace lanes::common::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace ssl = asio::ssl;
using tcp = asio::ip::tcp;

namespace {

constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);

// A peer that closes without close_notify ends the stream as a plain close would: the framing
// (Content-Length, chunked) says whether the message was whole, as for plain HTTP.
transport::read_result as_plain(transport::read_result r) {
    if (std::get<0>(r) == ssl::error::stream_truncated)
        std::get<0>(r) = asio::error::eof;
    return r;
}

} // namespace

// Over a reference to the transport's tcp_stream: rebind() re-creates that stream in place, and
// the TLS session (all of it in memory, in OpenSSL) goes on over the new one.
struct transport::tls {
    tls(beast::tcp_stream& next, std::shared_ptr<ssl::context> c)
        : ctx(std::move(c))
        , stream(next, *ctx) {}
    std::shared_ptr<ssl::context> ctx; // kept while the connection lives (a reload replaces it)
    beast::ssl_stream<beast::tcp_stream&> stream;
};

transport::transport(tcp::socket socket)
    : tcp_(std::in_place, std::move(socket)) {}

transport::transport(asio::any_io_executor ex)
    : tcp_(std::in_place, std::move(ex)) {}

transport::~transport() = default;

// accept_tls and connect_tls are plain functions that set the session up and return the
// handshake's coroutine, which takes no parameter of class type (GCC 12 mishandles those).
asio::awaitable<transport::error_code> transport::accept_tls(std::shared_ptr<ssl::context> ctx,
                                                             asio::const_buffer first,
                                                             duration timeout) {
    tls_ = std::make_unique<tls>(*tcp_, std::move(ctx));
    return handshake(true, first, timeout);
}

asio::awaitable<transport::error_code> transport::connect_tls(std::shared_ptr<ssl::context> ctx,
                                                              const std::string& host,
                                                              duration timeout) {
    const bool verify = SSL_CTX_get_verify_mode(ctx->native_handle()) != SSL_VERIFY_NONE;
    tls_ = std::make_unique<tls>(*tcp_, std::move(ctx));
    SSL* native = tls_->stream.native_handle();
    error_code ec;
    const auto address = asio::ip::make_address(host, ec);
    if (ec) { // a name: SNI, and the certificate must be for it
        SSL_set_tlsext_host_name(native, host.c_str());
        if (verify)
            SSL_set1_host(native, host.c_str());
    } else if (verify) { // an address: no SNI (RFC 6066), the certificate's IP entries
        X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(native), address.to_string().c_str());
    }
    return handshake(false, {}, timeout);
}

asio::awaitable<transport::error_code> transport::handshake(bool server, asio::const_buffer first,
                                                            duration timeout) {
    tcp_->expires_after(timeout);
    error_code ec;
    if (server) {
        auto [hec, used] =
            co_await tls_->stream.async_handshake(ssl::stream_base::server, first, use_tuple);
        ec = hec;
    } else {
        auto [hec] = co_await tls_->stream.async_handshake(ssl::stream_base::client, use_tuple);
        ec = hec;
    }
    tcp_->expires_never();
    co_return ec;
}

asio::awaitable<transport::read_result> transport::read_some(asio::mutable_buffer buffer) {
    if (tls_)
        co_return as_plain(co_await tls_->stream.async_read_some(buffer, use_tuple));
    co_return co_await tcp_->async_read_some(buffer, use_tuple);
}

asio::awaitable<transport::read_result> transport::read_some_bare(asio::mutable_buffer buffer) {
    if (tls_)
        co_return as_plain(co_await tls_->stream.async_read_some(buffer, use_tuple));
    co_return co_await tcp_->socket().async_read_some(buffer, use_tuple);
}

namespace {

// One initiation for read_secure_later: no coroutine frame of its own around the TLS read.
struct start_secure_later {
    template <typename Handler, typename Stream>
    void operator()(Handler&& h, Stream* stream, asio::mutable_buffer buffer,
                    const read_deadline* deadline) const {
        const auto ex = asio::get_associated_executor(h, stream->get_executor());
        auto start = [stream, buffer, deadline, ex, h = std::forward<Handler>(h)]() mutable {
            if (deadline && deadline->fired()) {
                asio::dispatch(ex,
                               asio::append(std::move(h),
                                            transport::error_code(asio::error::operation_aborted),
                                            std::size_t{0}));
                return;
            }
            stream->async_read_some(
                buffer, asio::bind_executor(ex, [h = std::move(h)](transport::error_code ec,
                                                                   std::size_t n) mutable {
                    if (ec == ssl::error::stream_truncated)
                        ec = asio::error::eof; // as as_plain
                    std::move(h)(ec, n);
                }));
        };
        asio::post(ex, std::move(start));
    }
};

} // namespace

asio::awaitable<transport::read_result>
transport::read_secure_later(asio::mutable_buffer buffer, const read_deadline* deadline) {
    auto token = use_tuple;
    return asio::async_initiate<decltype(token), void(error_code, std::size_t)>(
        start_secure_later{}, token, &tls_->stream, buffer, deadline);
}

asio::awaitable<transport::read_result>
transport::write(std::span<const asio::const_buffer> buffers, duration timeout) {
    if (!tls_) {
        tcp_->expires_after(timeout);
        auto result = co_await asio::async_write(*tcp_, buffers, use_tuple);
        tcp_->expires_never();
        co_return result;
    }
    write_deadline_.start(tcp_->socket(), timeout);
    auto [ec, n] = co_await asio::async_write(tls_->stream, buffers, use_tuple);
    write_deadline_.stop();
    co_return read_result{write_deadline_.result(ec), n};
}

asio::awaitable<void> transport::close_tls(duration timeout) {
    if (!tls_ || !tcp_->socket().is_open())
        co_return;
    tcp_->expires_after(timeout);
    co_await tls_->stream.async_shutdown(use_tuple); // an error (a peer that just closed) is fine
    tcp_->expires_never();
}

void transport::rebind(asio::any_io_executor ex) {
    if (tcp_->get_executor() == ex)
        return;
    write_deadline_.abandon(); // its timer belongs to the old executor
    error_code ec;
    const auto protocol = tcp_->socket().local_endpoint(ec).protocol();
    if (ec || !tcp_->socket().is_open()) {
        tcp_.emplace(std::move(ex)); // nothing to carry over
        tls_.reset();
        return;
    }
    const auto native = tcp_->socket().release(ec);
    if (ec) {
        tcp_.emplace(std::move(ex));
        tls_.reset();
        return;
    }
    tcp_.emplace(tcp::socket(std::move(ex), protocol, native));
}

} // namespace lanes::common::http
