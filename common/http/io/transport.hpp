// One connection's bytes: Beast's tcp_stream and, on a secure connection, Beast's ssl_stream over
// it. The server's sessions and the client's connections read and write through this without
// caring which; the socket-level shortcuts (write_now's immediate send, the client-closed peek,
// the lazily re-armed read deadline) work on socket(), which on a secure connection carries the
// TLS records. The TLS headers stay in transport.cpp.
#pragma once

#include "common/http/io/read_deadline.hpp"
#include "common/http/message.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <tuple>

namespace boost::asio::ssl {
class context;
}

namespace lanes::common::http {

class transport {
public:
    using error_code = boost::system::error_code;
    using read_result = std::tuple<error_code, std::size_t>;

    explicit transport(boost::asio::ip::tcp::socket socket);
    explicit transport(boost::asio::any_io_executor ex); // not connected yet
    ~transport();
    transport(const transport&) = delete;
    transport& operator=(const transport&) = delete;

    boost::beast::tcp_stream& tcp() { return *tcp_; }
    boost::asio::ip::tcp::socket& socket() { return tcp_->socket(); }
    bool secure() const { return tls_ != nullptr; }

    // Server side: TLS with `ctx` over the accepted connection, `first` being bytes already read
    // from it (the start of the ClientHello). Within `timeout`.
    boost::asio::awaitable<error_code> accept_tls(std::shared_ptr<boost::asio::ssl::context> ctx,
                                                  boost::asio::const_buffer first,
                                                  duration timeout);
    // Client side, once connected: TLS with `ctx`; `host` is sent as SNI (a name, not an
    // address) and checked against the certificate when `ctx` verifies peers.
    boost::asio::awaitable<error_code> connect_tls(std::shared_ptr<boost::asio::ssl::context> ctx,
                                                   const std::string& host, duration timeout);

    // One read, under the tcp_stream's expiry (expires_after).
    boost::asio::awaitable<read_result> read_some(boost::asio::mutable_buffer buffer);
    // One read that arms none of the tcp_stream's timers (set expires_never first): bounded by a
    // read_deadline on socket(), which cancels it.
    boost::asio::awaitable<read_result> read_some_bare(boost::asio::mutable_buffer buffer);
    // A secure connection's read_some_bare, started behind the handlers already ready (as
    // read_later.hpp does for a socket); a `deadline` that fired before it starts ends it at once.
    boost::asio::awaitable<read_result> read_secure_later(boost::asio::mutable_buffer buffer,
                                                          const read_deadline* deadline);
    // Writes all of `buffers` within `timeout` (a timeout is reported as Beast's).
    boost::asio::awaitable<read_result> write(std::span<const boost::asio::const_buffer> buffers,
                                              duration timeout);
    // A secure connection's close_notify, waiting at most `timeout` for the peer's; nothing on a
    // plain one. The socket stays open.
    boost::asio::awaitable<void> close_tls(duration timeout);

    // Moves the connection onto `ex` (another thread's io_context): the socket is re-created
    // from its descriptor; a TLS session goes on unchanged over it.
    void rebind(boost::asio::any_io_executor ex);

private:
    boost::asio::awaitable<error_code> handshake(bool server, boost::asio::const_buffer first,
                                                 duration timeout);

    std::optional<boost::beast::tcp_stream> tcp_;
    // A secure connection's writes: one lazily re-armed timer, where the tcp_stream's expiry
    // would arm and cancel one around every TLS record written.
    read_deadline write_deadline_;
    struct tls;
    std::unique_ptr<tls> tls_;
};

} // namespace lanes::common::http
