// What a handler of the HTTP server sees of its connection: a response_writer to answer on, and
// the two functions a server is given by its user (the handler, and how the server words the
// errors it answers itself).
#pragma once

#include "common/http/message.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace lanes::common::http {

// Where a handler writes its answer: either one complete response, or a streamed one
// (begin_stream, write_chunk or write_framed..., end_stream) sent with chunked transfer encoding,
// or to an HTTP/1.0 client, which has no chunked encoding, as bare bytes ended by closing the
// connection. Every call returns false once the client is gone; the handler should then stop and
// clean up.
class response_writer {
public:
    virtual ~response_writer() = default;
    // A whole answer: Server, Content-Type, `headers` in order, Content-Length, and Connection as
    // the request's keep-alive decides, then `body` (none for a HEAD request). `headers` and
    // `body` must outlive the call.
    virtual boost::asio::awaitable<bool> send(beast_http::status status,
                                              std::string_view content_type,
                                              std::span<const header_view> headers,
                                              std::string_view body) = 0;
    // The same from a Beast response: its fields other than Server, Content-Type, Content-Length,
    // Transfer-Encoding and Connection are the headers.
    boost::asio::awaitable<bool> send(response res);
    // The same for a handler that does not wait on the delivery (the session sees a broken
    // connection itself): what a route returns for an answer it words itself.
    boost::asio::awaitable<void> answer(response res);
    virtual boost::asio::awaitable<bool> begin_stream(beast_http::status status,
                                                      std::string_view content_type,
                                                      std::span<const header_view> headers) = 0;
    virtual boost::asio::awaitable<bool> write_chunk(std::string_view data) = 0;
    // Writes bytes that are already whole chunks in chunked framing (size line, data, CRLF; not
    // the last chunk), as a relay receives them from upstream: no decoding, no re-framing (an
    // HTTP/1.0 client gets the chunks' data).
    virtual boost::asio::awaitable<bool> write_framed(std::string_view chunks) = 0;
    // What write_framed would send, sent now without waiting where the writer can: the bytes the
    // client's socket took (all of them, or fewer when it is full: write_framed sends the rest),
    // or nullopt once the client is gone. A writer that cannot write at once takes none (0). A
    // relay's stream of small events so costs no coroutine frame per event.
    virtual std::optional<std::size_t> write_framed_now(std::string_view chunks);
    virtual boost::asio::awaitable<bool> end_stream() = 0;
    // Calls `on_closed` (on the session's executor) if the client closes its side of the
    // connection while the handler is still running, so work for a vanished client can be
    // aborted at once. Watching ends when the handler returns. A client that pipelines its next
    // request is not watched.
    virtual void on_client_closed(std::function<void()> on_closed) = 0;
    virtual bool started() const = 0; // true once anything has been written
    virtual const boost::asio::ip::tcp::endpoint& remote() const = 0;

    // The request's id, where the server gives requests one (server_config::request_ids): sent
    // as x-request-id on every answer, refusals included. Empty otherwise.
    const std::string& request_id() const { return request_id_; }
    // The status of the answer begun (0 before one is).
    int answered_status() const { return answered_status_; }
    // Why the handler refused the request, a short token such as "invalid_api_key" (a string
    // with static storage), for the server's access hook; empty when it did not say.
    void note_refusal(std::string_view reason) { refusal_ = reason; }
    std::string_view refusal() const { return refusal_; }
    // The handler wrote the request's access line itself: the access hook adds none.
    void mark_logged() { logged_ = true; }
    bool logged() const { return logged_; }

protected:
    // A new request on the same connection: nothing of the last one's is kept.
    void reset_answer_state(std::string id) {
        request_id_ = std::move(id);
        answered_status_ = 0;
        refusal_ = {};
        logged_ = false;
    }
    void note_status(beast_http::status status) { answered_status_ = static_cast<int>(status); }

private:
    std::string request_id_;
    int answered_status_ = 0;
    std::string_view refusal_;
    bool logged_ = false;
};

using handler = std::function<boost::asio::awaitable<void>(request&, response_writer&)>;

// Called once a request is answered (after the handler, or a refusal the server made itself):
// `req` is null when the server refused bytes that never became a request.
using answered_hook = std::function<void(const request* req, const response_writer& out)>;

// Whether a client's x-request-id is taken as the request's id: 1 to 128 of A-Z a-z 0-9 . _ -
bool acceptable_request_id(std::string_view id);
// A fresh request id ("req-" and 32 hex digits).
std::string make_request_id();

// The body of an answer the server makes itself: a refusal (400, 413, 431) or a handler that
// produced no answer (500). The server's user words it (an OpenAI server as OpenAI error JSON).
struct error_page {
    std::string content_type;
    std::string body;
};
using error_writer = std::function<error_page(int status, std::string_view message)>;
// The default: the message as plain text.
error_page plain_error_page(int status, std::string_view message);

} // namespace lanes::common::http
