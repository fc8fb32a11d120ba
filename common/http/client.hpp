// HTTP/1.1 client on Beast for upstream requests: a keep-alive connection that sends a request
// and reads the response header, then the body chunk by chunk as it arrives (so SSE can be relayed
// without buffering). One-shot requests for small bodies are in fetch.hpp.
#pragma once

#include "common/http/chunked.hpp"
#include "common/http/io/read_deadline.hpp"
#include "common/http/message.hpp"
#include "common/http/parse.hpp"
#include "common/http/url.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/beast/core/flat_buffer.hpp>

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace lanes::common::http {

class transport;
class response_writer;

// An error of this process's own resources (out of file descriptors, buffers, memory or local
// ports), not of the peer: never a reason to think the peer is down.
bool local_resource_error(const boost::system::error_code& ec);

class client_connection {
public:
    explicit client_connection(boost::asio::any_io_executor ex);
    ~client_connection();
    client_connection(const client_connection&) = delete;
    client_connection& operator=(const client_connection&) = delete;

    // Connects to `target`, over TLS for an https URL (with client_tls_context()'s trust; the
    // handshake within the same `timeout`).
    boost::asio::awaitable<boost::system::error_code> connect(const url& target, duration timeout);
    bool is_open() const;
    // Whether an idle connection is as it was left: open, nothing arrived (no stray bytes a
    // replica wrote after its answer, no close). A pool checks before reuse: the next request
    // must not read another's bytes. One non-blocking peek, no I/O wait.
    bool quiet() const;
    void close();
    // Moves an idle connection onto `ex` (the executor of the coroutine about to use it). A
    // connection taken from a pool shared by several threads must be rebound: its stream's
    // deadline timer would otherwise complete on the executor of the coroutine that created it,
    // concurrently with the new user.
    void rebind(boost::asio::any_io_executor ex);
    // The io_context its socket is registered with (a rebind onto another one registers it
    // anew: three system calls and a lost readiness state).
    const boost::asio::execution_context& context() const;

    // Sends `req` (Host is set from the connected url when absent).
    boost::asio::awaitable<boost::system::error_code> write(outgoing_request& req,
                                                            duration timeout);
    // Sends a request already on the wire format: `head` (start line, fields, blank line, as
    // serialize_header makes) then `body`, in one gathered write. Both must outlive the call.
    boost::asio::awaitable<boost::system::error_code>
    write_raw(std::string_view head, std::string_view body, duration timeout);
    // Reads the response status line and headers (interim 1xx answers are skipped).
    boost::asio::awaitable<boost::system::error_code> read_header(duration timeout);
    const response_head& head() const { return head_; }
    // Next piece of the body as it arrives; `out` is empty and done() true at the end. Each call
    // waits at most `idle_timeout` for bytes.
    boost::asio::awaitable<boost::system::error_code> read_chunk(std::string& out,
                                                                 duration idle_timeout);
    bool done() const;
    // True when the response completed and the server allows another request on this connection.
    bool reusable() const;

    // True when the response body uses chunked transfer coding (after read_header).
    bool chunked() const;
    // For a chunked body, instead of read_chunk: the next whole chunks exactly as they arrived
    // (size lines, data, CRLFs), for a relay to forward without decoding and re-encoding; `out`
    // is empty and done() true once the last chunk and trailers have been read. A chunk that
    // would need more than `max_buffered` bytes buffered is an error, as is broken framing.
    // `out` views the connection's own buffer (no copy), valid until the next call on it.
    boost::asio::awaitable<boost::system::error_code>
    read_framed_chunks(std::string_view& out, duration idle_timeout, std::size_t max_buffered);

    // A relay's loop over read_framed_chunks and response_writer::write_framed_now, run without
    // resuming the caller for each read: every read's whole chunks go to `out` on the spot, and
    // reading goes on while its socket takes them all. It returns at the end of the body
    // (done()), at an error (`ec`, as read_framed_chunks reports it), when the client is gone
    // (write_framed_now said so), or with the chunks `out` did not take at once (`rest`, a view
    // valid until the next call on this connection, for the caller to send by other means).
    // A plain connection only (pumpable()); each read waits at most `idle_timeout`.
    struct pump_result {
        boost::system::error_code ec;
        std::string_view rest;
        bool client_gone = false;
    };
    boost::asio::awaitable<pump_result>
    pump_framed_chunks(response_writer& out, duration idle_timeout, std::size_t max_buffered);
    bool pumpable() const;

private:
    struct pump_access; // the pump (client_pump.cpp)

    // The readers work on what is already buffered and read the socket only when that is not
    // enough (a small answer usually arrives whole, with its header): each returns true when the
    // buffer settled the call (the header, a piece, the end, or an error in `ec`).
    bool take_buffered_header(boost::system::error_code& ec);
    bool take_buffered_piece(std::string& out, boost::system::error_code& ec);
    // Sets the deadline (first byte, stream idle) for the read about to start.
    void start_deadline(duration timeout);
    boost::system::error_code header_bytes_read(boost::system::error_code ec, std::size_t n);
    // After a read of `got` bytes: the next one may take twice as many when this one was full.
    void grow_reads(std::size_t got);
    // Lets go of the chunks read_framed_chunks last handed out (their view ends here).
    void release_view();
    // read_framed_chunks' steps, shared with the pump: the buffer's whole chunks as a view (true,
    // or true with `ec` on broken framing or past `max_buffered`; false: more bytes needed), the
    // next read's buffer with its deadline set, and that read's outcome (its bytes kept).
    bool take_buffered_chunks(std::string_view& out, boost::system::error_code& ec,
                              std::size_t max_buffered);
    boost::asio::mutable_buffer prepare_chunks_read(duration idle_timeout,
                                                    std::size_t max_buffered);
    boost::system::error_code chunk_bytes_read(boost::system::error_code ec, std::size_t n);

    std::unique_ptr<transport> io_; // its socket is re-created by rebind()
    read_deadline deadline_;
    boost::beast::flat_buffer buffer_;
    std::size_t read_size_ = 2048; // the next read's size (grow_reads; min_read_size)
    response_head head_;
    chunk_decoder decoder_;  // read_chunk on a chunked body
    std::uint64_t left_ = 0; // body bytes still to come, for a Content-Length body
    std::size_t viewed_ = 0; // buffer_'s first bytes, still viewed by read_framed_chunks' caller
    url target_;
    bool open_ = false;
    bool head_request_ = false;    // the request sent was a HEAD: its answer has no body
    std::size_t head_scanned_ = 0; // of the answer's header so far, what parse() has scanned
    bool header_read_ = false;     // read_header succeeded for the request sent last
    bool body_done_ = false;       // the whole body of that answer has been read
};

// True for a failure that shows a kept-alive connection had been closed by the server while it
// sat idle: the write failed, or the connection ended (closed or reset) before any byte of an
// answer. A request that failed so can go again on a fresh connection; after any other failure
// (a timeout, part of an answer) the server may have acted on it.
bool closed_while_idle(boost::system::error_code ec);

} // namespace lanes::common::http
