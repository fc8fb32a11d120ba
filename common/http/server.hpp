// HTTP/1.1 server on Beast with one C++20 coroutine per connection: keep-alive, header and body
// limits, idle / header-read / body-read / write deadlines, chunked streaming responses, graceful
// shutdown. The handler is a coroutine that receives the parsed request and a response_writer; it
// never sees sockets.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/beast/http/empty_body.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lanes::common::http {

namespace beast_http = boost::beast::http;
// A request this process sends (the client side), as Beast's message.
using outgoing_request = beast_http::request<beast_http::string_body>;
using response = beast_http::response<beast_http::string_body>;
using header_list = std::vector<std::pair<std::string, std::string>>;
using header_view = std::pair<std::string_view, std::string_view>;
using duration = std::chrono::milliseconds;

// The start line and header fields of a message, ending with the blank line: what goes on the
// wire before the body, as one string. Sent with the body as one gathered write, this replaces
// Beast's serializer, which walks a buffer sequence with a piece per field.
std::string serialize_header(const outgoing_request& req);
std::string serialize_header(const response& res);

// A request as the server read it: the start line, the fields and the body. The header's text is
// one string and the fields are offsets into it, so a request costs three allocations at most
// (text, field table, body) where Beast's message takes one per field and looks each name up
// in its table of known fields. Field names compare ASCII case-insensitively.
class request {
public:
    beast_http::verb method() const { return verb_; }
    std::string_view method_string() const { return slice(method_); }
    std::string_view target() const { return slice(target_); }
    unsigned version() const { return version_; } // 10 or 11
    // HTTP/1.1 keeps the connection unless a Connection field says close; HTTP/1.0 only when one
    // says keep-alive.
    bool keep_alive() const;
    // The first field of this name, if any.
    std::optional<std::string_view> find(std::string_view name) const;
    std::string_view operator[](std::string_view name) const { return find(name).value_or(""); }
    std::string_view operator[](beast_http::field name) const;
    std::size_t field_count() const { return fields_.size(); }
    std::string_view name(std::size_t i) const { return slice(fields_[i].first); }
    std::string_view value(std::size_t i) const { return slice(fields_[i].second); }
    std::string& body() { return body_; }
    const std::string& body() const { return body_; }

    // Building one (the server's parsers; tests): the start line, then each field in order.
    // `text_bytes` is a hint for the header's size.
    void start(beast_http::verb verb, std::string_view method, std::string_view target,
               unsigned version, std::size_t text_bytes = 0);
    // The same for a parser holding the whole header as text: `header` is copied once, and the
    // method, target and the views later given to add() that lie in it are kept as offsets.
    void start_in(std::string_view header, beast_http::verb verb, std::string_view method,
                  std::string_view target, unsigned version);
    void add(std::string_view name, std::string_view value);

private:
    struct span {
        std::uint32_t offset = 0;
        std::uint32_t size = 0;
    };
    std::string_view slice(span s) const { return {text_.data() + s.offset, s.size}; }
    span keep(std::string_view s);
    void reset(std::string_view text, const char* source, beast_http::verb verb,
               std::string_view method, std::string_view target, unsigned version);

    std::string text_;
    const char* source_ = nullptr; // start_in's header: views into it map to offsets in text_
    span method_, target_;
    std::vector<std::pair<span, span>> fields_;
    beast_http::verb verb_ = beast_http::verb::unknown;
    unsigned version_ = 11;
    std::string body_;
};

struct server_config {
    std::size_t header_limit = 16 * 1024;     // request line + headers, bytes (over: 431)
    std::size_t body_limit = 8 * 1024 * 1024; // request body, bytes (over: 413)
    duration idle_timeout{60'000};            // keep-alive wait for the next request
    duration header_read_timeout{10'000};     // first byte -> end of headers
    duration body_read_timeout{30'000};       // end of headers -> end of body
    duration write_timeout{30'000};           // each response write (header or chunk)
    duration shutdown_grace{10'000};          // how long stop() lets in-flight requests run
    // A handler that asked to hear of its client leaving (on_client_closed) is watched from this
    // long after (up to twice it): a request answered sooner costs no watch. 0: at once.
    duration client_watch_delay{10};
    // Threads running the io_context. With one, connections skip strands (nothing can run
    // concurrently), which saves a dispatch per I/O completion.
    unsigned threads = 1;
};

// Where a handler writes its answer: either one complete response, or a streamed one
// (begin_stream, write_chunk..., end_stream) sent with chunked transfer encoding, or to an HTTP/1.0
// client, which has no chunked encoding, as bare bytes ended by closing the connection. Every
// call returns false once the client is gone; the handler should then stop and clean up.
class response_writer {
public:
    virtual ~response_writer() = default;
    virtual boost::asio::awaitable<bool> send(response res) = 0;
    // The same from its parts, without building a message: Server, Content-Type, `headers` in
    // order, Content-Length, and Connection as the request's keep-alive decides. `headers` and
    // `body` must outlive the call. (A proxy relays every whole answer through this.)
    virtual boost::asio::awaitable<bool> send(beast_http::status status,
                                              std::string_view content_type,
                                              std::span<const header_view> headers,
                                              std::string_view body) = 0;
    // The send above in two steps, for a caller that wants no coroutine when the socket takes
    // the whole answer at once (the usual case): send's result then, or nullopt when a part is
    // left, which send_rest() sends (await it next, before writing anything else). `headers`
    // and `body` must outlive send_rest().
    virtual std::optional<bool> send_at_once(beast_http::status status,
                                             std::string_view content_type,
                                             std::span<const header_view> headers,
                                             std::string_view body) = 0;
    virtual boost::asio::awaitable<bool> send_rest() = 0;
    virtual boost::asio::awaitable<bool> begin_stream(beast_http::status status,
                                                      std::string_view content_type,
                                                      const header_list& headers = {}) = 0;
    virtual boost::asio::awaitable<bool> write_chunk(std::string_view data) = 0;
    // Writes bytes that are already whole chunks in chunked framing (size line, data, CRLF; not
    // the last chunk), as a relay receives them from upstream: no decoding, no re-framing (an
    // HTTP/1.0 client gets the chunks' data).
    virtual boost::asio::awaitable<bool> write_framed(std::string_view chunks) = 0;
    virtual boost::asio::awaitable<bool> end_stream() = 0;
    // Calls `on_closed` (on the session's executor) if the client closes its side of the
    // connection while the handler is still running, so work for a vanished client can be
    // aborted at once. Watching ends when the handler returns. A client that pipelines its next
    // request is not watched.
    virtual void on_client_closed(std::function<void()> on_closed) = 0;
    virtual bool started() const = 0; // true once anything has been written
    virtual const boost::asio::ip::tcp::endpoint& remote() const = 0;
};

using handler = std::function<boost::asio::awaitable<void>(request&, response_writer&)>;

// A response with a JSON body and the usual headers; `keep_alive` copied from the request.
response make_response(const request& req, beast_http::status status, std::string body,
                       std::string_view content_type = "application/json");

class server {
public:
    server(boost::asio::io_context& io, server_config config, handler h, std::string name);
    ~server();
    server(const server&) = delete;
    server& operator=(const server&) = delete;

    // Spreads new connections round-robin over `workers`, io_contexts each run by one thread of
    // their own (see run_until_signal): a connection then lives on one thread and needs no
    // strand. Call before listen(). Without workers, connections stay on the server's io_context.
    void spread_over(std::vector<boost::asio::io_context*> workers);
    // Binds and starts accepting; returns the bound port (port 0 picks a free one) and logs
    // "<name> listening on http://host:port". Throws boost::system::system_error on bind failure.
    unsigned short listen(const std::string& host, unsigned short port);
    // Stops accepting, closes idle keep-alive connections and lets requests in progress finish
    // (their connections close afterwards). Thread-safe; idempotent.
    void stop();
    std::size_t active_requests() const;
    std::size_t open_connections() const;

    struct state; // shared with sessions

private:
    std::shared_ptr<state> state_;
};

} // namespace lanes::common::http
