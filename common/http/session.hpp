// One client connection of the HTTP server (private to common/http/server.cpp, which makes them):
// read requests with keep-alive, limits and deadlines, hand each to the handler, answer through a
// session_writer, and watch for a client that leaves while its request is served.
#pragma once

#include "common/http/io/read_deadline.hpp"
#include "common/http/io/transport.hpp"
#include "common/http/io/watch_delay.hpp"
#include "common/http/response_writer.hpp"
#include "common/http/server.hpp"
#include "common/http/session_writer.hpp"
#include "common/http/tls.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace lanes::common::http {

// What the sessions of one server share with it.
struct session_context {
    session_context(server_config c, handler h_, error_writer e, std::string n)
        : cfg(c)
        , h(std::move(h_))
        , errors(std::move(e))
        , name(std::move(n)) {}

    const server_config cfg;
    const handler h;
    const error_writer errors;
    const std::string name;
    std::shared_ptr<tls_identity> tls; // set before the server listens: every connection is TLS
    answered_hook answered;            // set before the server listens; may be empty
    head_screen screen;                // set before the server listens; may be empty
    std::atomic<bool> stopping{false};
    std::atomic<std::size_t> active{0}; // requests being served
};

class session : public response_writer,
                public watch_delay::waiter,
                public std::enable_shared_from_this<session> {
public:
    // `watches`: where the client-closed watch waits before it is armed; none arms it at once.
    // `remote`: the client's address, as the accept gave it.
    session(boost::asio::ip::tcp::socket socket, boost::asio::ip::tcp::endpoint remote,
            std::shared_ptr<session_context> ctx, std::shared_ptr<watch_delay> watches);
    ~session();

    boost::asio::awaitable<void> run();

    // Called (on any thread) by server::stop(): closes the connection if it waits for a request.
    // Closed rather than cancelled: the read may not have started yet (read_some_later), and a
    // read that starts on a closed socket ends at once.
    void close_if_idle();

    using response_writer::send;
    boost::asio::awaitable<bool> send(beast_http::status status, std::string_view content_type,
                                      std::span<const header_view> headers,
                                      std::string_view body) override {
        note_status(status);
        return writer_.send(status, content_type, headers, body);
    }
    boost::asio::awaitable<bool> begin_stream(beast_http::status status,
                                              std::string_view content_type,
                                              std::span<const header_view> headers) override {
        note_status(status);
        return writer_.begin_stream(status, content_type, headers);
    }
    boost::asio::awaitable<bool> write_chunk(std::string_view data) override {
        return writer_.write_chunk(data);
    }
    boost::asio::awaitable<bool> write_framed(std::string_view chunks) override {
        return writer_.write_framed(chunks);
    }
    std::optional<std::size_t> write_framed_now(std::string_view chunks) override {
        return writer_.write_framed_now(chunks);
    }
    boost::asio::awaitable<bool> end_stream() override { return writer_.end_stream(); }
    void on_client_closed(std::function<void()> on_closed) override;
    void watch_now() override;
    bool started() const override { return writer_.started(); }
    const boost::asio::ip::tcp::endpoint& remote() const override { return remote_; }

private:
    // Reads the request that begins in buffer_ into req_ with Beast's parser; false when the
    // connection should close (after answering any error).
    boost::asio::awaitable<bool> read_with_parser();
    enum class header_read { complete, too_large, bare_lf, bad_method, closed };
    boost::asio::awaitable<header_read> read_header_bytes();
    bool take_plain_request();
    void start_serving();
    // The request's id (server_config::request_ids), the client's value set aside when unfit.
    void assign_request_id();
    bool finish_serving(const std::string& failure);
    // Lets go of the read buffer and the request's buffers where a big request grew them, and
    // hands a large one's memory back to the system at once (common::return_free_memory).
    void drop_large_buffers();
    boost::asio::awaitable<void> refuse(int status, const std::string& message);
    // The head screen's refusal of the request in req_ (its body not read): sent, then the
    // connection lingers and closes as after refuse().
    boost::asio::awaitable<void> refuse_with(response res);
    // After a refusal: drops what the client still sends, within the lingering bounds.
    boost::asio::awaitable<void> linger();
    // A TLS listener's first step: the handshake, or a plain refusal of plain HTTP. False when
    // the connection is to close.
    boost::asio::awaitable<bool> start_tls();
    void stop_watching();
    void arm_watch();
    void arm_tls_watch();
    void keep_watch_bytes(std::size_t n); // the TLS watch's bytes, to the next request's buffer

    transport io_;
    std::shared_ptr<session_context> ctx_;
    session_writer writer_;
    read_deadline idle_deadline_; // the keep-alive wait for the next request
    // Bytes read and not yet taken: at most a header and framing_buffer_limit more (a chunk
    // line or trailer section cannot grow it past that).
    boost::beast::flat_buffer buffer_;
    std::size_t header_bytes_ = 0; // the header's length, once read_header_bytes found its end
    request req_; // the request being served; reused, so its buffers are allocated once
    boost::asio::ip::tcp::endpoint remote_;
    bool idle_ = true;
    bool refused_ = false;  // the connection ends on a refusal: linger before closing
    bool tls_up_ = false;   // the TLS handshake succeeded: close with close_notify
    unsigned version_ = 11; // of the request being read or served
    std::shared_ptr<watch_delay> watch_delay_;
    std::function<void()> on_closed_;
    bool watch_wanted_ = false;          // from on_client_closed() to the handler's end
    bool watch_armed_ = false;           // the peeking receive is pending
    std::uint64_t watch_generation_ = 0; // of the watch in force; older completions are ignored
    char watch_byte_ = 0;                // the client-closed watch peeks into it
    // A TLS connection's watch reads through the session instead (a TLS 1.3 close_notify is an
    // application-data record from outside): what a pipelining client sends lands here first.
    std::array<char, 256> watch_tls_{};
};

} // namespace lanes::common::http
