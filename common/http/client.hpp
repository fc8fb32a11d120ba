// HTTP/1.1 client on Beast for upstream requests: a keep-alive connection that sends a request
// and reads the response header, then the body chunk by chunk as it arrives (so SSE can be relayed
// without buffering); plus a one-shot `fetch` for small bodies (health checks, metric scrapes).
#pragma once

#include "common/http/chunked.hpp"
#include "common/http/io/read_deadline.hpp"
#include "common/http/io/socket_write.hpp"
#include "common/http/parse.hpp"
#include "common/http/server.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/core/tcp_stream.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace lanes::common::http {

struct url {
    std::string host; // without brackets for IPv6
    unsigned short port = 80;
    std::string base_path; // "" or "/prefix" (no trailing slash)

    std::string authority() const; // host:port, IPv6 in brackets
    std::string str() const;       // http://authority + base_path
};

// Accepts "http://host[:port][/path]" and "host:port"; https is refused with a message.
std::optional<url> parse_url(std::string_view text, std::string* error = nullptr);

class client_connection {
public:
    explicit client_connection(boost::asio::any_io_executor ex);
    ~client_connection();
    client_connection(const client_connection&) = delete;
    client_connection& operator=(const client_connection&) = delete;

    boost::asio::awaitable<boost::system::error_code> connect(const url& target, duration timeout);
    bool is_open() const;
    void close();
    // Moves an idle connection onto `ex` (the executor of the coroutine about to use it). A
    // connection taken from a pool shared by several threads must be rebound: its stream's
    // deadline timer would otherwise complete on the executor of the coroutine that created it,
    // concurrently with the new user.
    void rebind(boost::asio::any_io_executor ex);

    // Sends `req` (Host is set from the connected url when absent).
    boost::asio::awaitable<boost::system::error_code> write(outgoing_request& req,
                                                            duration timeout);
    // Sends a request already on the wire format: `head` (start line, fields, blank line, as
    // serialize_header makes) then `body`, in one gathered write. Both must outlive the call.
    boost::asio::awaitable<boost::system::error_code>
    write_raw(std::string_view head, std::string_view body, duration timeout);
    // write_raw in two steps, so that a request the socket takes at once costs no coroutine
    // frame: start_write_raw hands the socket what it takes now; unless that is `done` (all
    // sent, or failed: ec), finish_write_raw sends the rest. Same arguments to both.
    write_attempt start_write_raw(std::string_view head, std::string_view body);
    boost::asio::awaitable<boost::system::error_code> finish_write_raw(std::string_view head,
                                                                       std::string_view body,
                                                                       std::size_t written,
                                                                       duration timeout);
    // Reads the response status line and headers (interim 1xx answers are skipped).
    boost::asio::awaitable<boost::system::error_code> read_header(duration timeout);
    // read_header's steps, for a caller that reads the header in its own coroutine (a frame
    // fewer): take_buffered_header parses what is buffered (true when that settled it: the
    // header read, or an error in `ec`); if not, start_deadline(timeout) once, then await
    // read_more() and pass its result to header_bytes_read() (an error ends the header) until
    // take_buffered_header settles it.
    bool take_buffered_header(boost::system::error_code& ec);
    // Sets the deadline (first byte, stream idle) for the read about to start.
    void start_deadline(duration timeout);
    boost::asio::awaitable<std::tuple<boost::system::error_code, std::size_t>> read_more();
    boost::system::error_code header_bytes_read(boost::system::error_code ec, std::size_t n);
    const response_head& head() const { return head_; }
    // Next piece of the body as it arrives; `out` is empty and done() true at the end. Each call
    // waits at most `idle_timeout` for bytes.
    boost::asio::awaitable<boost::system::error_code> read_chunk(std::string& out,
                                                                 duration idle_timeout);
    // read_chunk without waiting, from what is already buffered: true when that settled the call
    // (a piece in `out`, the body's end, or an error in `ec`), false when bytes must be read
    // first (then call read_chunk). Saves a coroutine when the answer arrived with its header.
    bool take_buffered_piece(std::string& out, boost::system::error_code& ec);
    bool done() const;
    // True when the response completed and the server allows another request on this connection.
    bool reusable() const;

    // True when the response body uses chunked transfer coding (after read_header).
    bool chunked() const;
    // For a chunked body, instead of read_chunk: the next whole chunks exactly as they arrived
    // (size lines, data, CRLFs), for a relay to forward without decoding and re-encoding; `out`
    // is empty and done() true once the last chunk and trailers have been read. A chunk that
    // would need more than `max_buffered` bytes buffered is an error, as is broken framing.
    boost::asio::awaitable<boost::system::error_code>
    read_framed_chunks(std::string& out, duration idle_timeout, std::size_t max_buffered);

private:
    std::optional<boost::beast::tcp_stream> stream_; // re-created by rebind()
    read_deadline deadline_;
    boost::beast::flat_buffer buffer_;
    response_head head_;
    chunk_decoder decoder_;  // read_chunk on a chunked body
    std::uint64_t left_ = 0; // body bytes still to come, for a Content-Length body
    url target_;
    bool open_ = false;
    bool head_request_ = false; // the request sent was a HEAD: its answer has no body
    bool header_read_ = false;  // read_header succeeded for the request sent last
    bool body_done_ = false;    // the whole body of that answer has been read
};

// True for a failure that shows a kept-alive connection had been closed by the server while it
// sat idle: the write failed, or the connection ended (closed or reset) before any byte of an
// answer. A request that failed so can go again on a fresh connection; after any other failure
// (a timeout, part of an answer) the server may have acted on it.
bool closed_while_idle(boost::system::error_code ec);

struct fetch_result {
    boost::system::error_code ec; // transport error, or timeout
    int status = 0;
    std::string body;
    std::string content_type;
    header_list headers; // every response header, in order
};

struct fetch_options {
    duration connect_timeout{2'000};
    duration total_timeout{5'000};
    std::size_t body_limit = 4 * 1024 * 1024;
    std::string body;
    std::string content_type = "application/json";
    header_list headers;
    // Ask the server to keep the connection open (fetch_on can then use it again); without it the
    // request says `Connection: close`.
    bool keep_alive = false;
};

// One request on a fresh connection; reads the whole body (bounded by body_limit). `target` and
// `options` must outlive the call: pass named objects, not temporaries (GCC 12 mishandles
// class-type temporaries and by-value class parameters of coroutines).
boost::asio::awaitable<fetch_result> fetch(boost::asio::any_io_executor ex, const url& target,
                                           beast_http::verb method, std::string_view path,
                                           const fetch_options& options);

// fetch() on `conn`, an open connection kept from an earlier fetch_on (moved onto `ex`), or on a
// fresh one when `conn` is null or closed (a fresh one is left in `conn`). A GET or HEAD on a kept
// connection the server had closed while it sat idle (closed_while_idle) is sent again, once, on a
// fresh one. Afterwards `conn` is open only when options.keep_alive is
// set and the answer allows another request on it.
boost::asio::awaitable<fetch_result> fetch_on(std::unique_ptr<client_connection>& conn,
                                              boost::asio::any_io_executor ex, const url& target,
                                              beast_http::verb method, std::string_view path,
                                              const fetch_options& options);

// fetch() on a private io_context, blocking the calling thread until it completes (for tools
// and tests that run no io_context of their own).
fetch_result fetch_blocking(const url& target, beast_http::verb method, std::string_view path,
                            const fetch_options& options);

} // namespace lanes::common::http
