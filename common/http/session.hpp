// Private to the HTTP server's two files (common/http_server.cpp: the listener, accept loop and
// wire helpers; common/http_session.cpp: one connection's requests and responses): the server's
// shared state and the session class.
#pragma once

#include "common/http/io/read_deadline.hpp"
#include "common/http/io/socket_write.hpp"
#include "common/http/io/watch_delay.hpp"
#include "common/http/server.hpp"

#include <boost/asio.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::common::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

inline constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
inline constexpr std::string_view server_header = "lanes";

// "HTTP/1.1" or "HTTP/1.0" for a Beast version number.
std::string_view version_text(unsigned version);

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
    // Per io_context (worker, or the one `io`): its sessions' delayed watches. Accept loop only.
    std::vector<std::weak_ptr<watch_delay>> watch_lists;
    std::atomic<bool> stopping{false};
    std::atomic<std::size_t> active{0};
    std::atomic<std::size_t> connections{0};
    std::mutex mutex;
    std::set<std::weak_ptr<session>, std::owner_less<std::weak_ptr<session>>> sessions;
};

class session : public response_writer,
                public watch_delay::waiter,
                public std::enable_shared_from_this<session> {
public:
    // `watches`: where the client-closed watch waits before it is armed; none arms it at once.
    session(tcp::socket socket, std::shared_ptr<server::state> st,
            std::shared_ptr<watch_delay> watches)
        : stream_(std::move(socket))
        , st_(std::move(st))
        , watch_delay_(std::move(watches)) {
        boost::system::error_code ec;
        remote_ = stream_.socket().remote_endpoint(ec);
        // No Nagle: a streamed response is a header and then one small write per token. With
        // Nagle each small write after the first waited for the peer's (delayed) ACK of the one
        // before, which added tens of milliseconds to time to first token (as nginx, whose
        // tcp_nodelay is on by default for keep-alive connections).
        stream_.socket().set_option(tcp::no_delay(true), ec);
        prepare_for_write_now(stream_);
    }

    ~session() {
        if (watch_delay_)
            watch_delay_->remove(*this); // an unfinished handler's, at shutdown
    }

    asio::awaitable<void> run();

    // Called (on any thread) by server::stop(): closes the connection if it waits for a request.
    // Closed rather than cancelled: the read may not have started yet (read_some_later), and a
    // read that starts on a closed socket ends at once.
    void close_if_idle() {
        asio::post(stream_.get_executor(), [self = shared_from_this()] {
            if (self->idle_) {
                boost::system::error_code ignored;
                self->stream_.socket().close(ignored);
            }
        });
    }

    asio::awaitable<bool> send(response res) override;
    asio::awaitable<bool> send(beast_http::status status, std::string_view content_type,
                               std::span<const header_view> headers,
                               std::string_view body) override;
    std::optional<bool> send_at_once(beast_http::status status, std::string_view content_type,
                                     std::span<const header_view> headers,
                                     std::string_view body) override;
    asio::awaitable<bool> send_rest() override;
    asio::awaitable<bool> begin_stream(beast_http::status status, std::string_view content_type,
                                       const header_list& headers) override;
    asio::awaitable<bool> write_chunk(std::string_view data) override;
    asio::awaitable<bool> write_framed(std::string_view chunks) override;
    asio::awaitable<bool> end_stream() override;
    void on_client_closed(std::function<void()> on_closed) override;
    void watch_now() override;
    bool started() const override { return started_; }
    const tcp::endpoint& remote() const override { return remote_; }

private:
    // Reads the request that begins in buffer_ into req_ with Beast's parser; false when the
    // connection should close (after answering any error).
    asio::awaitable<bool> read_with_parser();
    bool take_plain_request();
    void start_serving();
    bool finish_serving(const std::string& failure);
    asio::awaitable<void> refuse(int status, std::string message);
    bool parse_buffered(beast_http::request_parser<beast_http::string_body>& parser,
                        boost::system::error_code& ec);
    // A write of `count` buffers in two steps (see write_now): the part the socket takes at once,
    // true when nothing is left; then, only if needed, a coroutine for the rest. A failure of
    // either marks the connection broken.
    bool write_at_once(const asio::const_buffer* wire, std::size_t count, std::size_t& written);
    asio::awaitable<void> write_the_rest(const asio::const_buffer* wire, std::size_t count,
                                         std::size_t written);
    void stop_watching();
    void arm_watch();

    beast::tcp_stream stream_;
    read_deadline idle_deadline_; // the keep-alive wait for the next request
    beast::flat_buffer buffer_;
    request req_; // the request being served; reused, so its buffers are allocated once
    std::shared_ptr<server::state> st_;
    tcp::endpoint remote_;
    bool idle_ = true;
    bool started_ = false;
    bool broken_ = false;
    bool keep_alive_ = true;
    bool head_request_ = false; // the request being answered is a HEAD: send no body
    bool chunked_ = true;       // the stream being sent is chunked (not to an HTTP/1.0 client)
    unsigned version_ = 11;
    std::string head_buffer_;                // a whole response's head, kept for the next one
    std::array<asio::const_buffer, 2> rest_; // send_at_once's answer, for send_rest()
    std::size_t rest_written_ = 0;
    std::shared_ptr<watch_delay> watch_delay_;
    std::function<void()> on_closed_;
    bool watch_wanted_ = false;          // from on_client_closed() to the handler's end
    bool watch_armed_ = false;           // the peeking receive is pending
    std::uint64_t watch_generation_ = 0; // of the watch in force; older completions are ignored
    char watch_byte_ = 0;                // the client-closed watch peeks into it
};

} // namespace lanes::common::http
