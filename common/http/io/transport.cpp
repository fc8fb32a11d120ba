#include "common/http/io/transport.hpp"

#include <boost/asio/as_tuple.hpp>
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

asio::awaitable<transport::error_code> transport::accept_tls(std::shared_ptr<ssl::context> ctx,
                                                             asio::const_buffer first,
                                                             duration timeout) {
    tls_ = std::make_unique<tls>(*tcp_, std::move(ctx));
    tcp_->expires_after(timeout);
    auto [ec, used] =
        co_await tls_->stream.async_handshake(ssl::stream_base::server, first, use_tuple);
    tcp_->expires_never();
    co_return ec;
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
    tcp_->expires_after(timeout);
    auto [hec] = co_await tls_->stream.async_handshake(ssl::stream_base::client, use_tuple);
    tcp_->expires_never();
    co_return hec;
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

asio::awaitable<transport::read_result>
transport::write(std::span<const asio::const_buffer> buffers) {
    if (tls_)
        co_return co_await asio::async_write(tls_->stream, buffers, use_tuple);
    co_return co_await asio::async_write(*tcp_, buffers, use_tuple);
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
