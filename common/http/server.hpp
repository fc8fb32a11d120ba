// HTTP/1.1 server on Beast with one C++20 coroutine per connection: keep-alive, header and body
// limits, idle / header-read / body-read / write deadlines, chunked streaming responses, graceful
// shutdown. The handler is a coroutine that receives the parsed request and a response_writer; it
// never sees sockets. The errors the server answers itself are worded by its user's error_writer.
#pragma once

#include "common/http/message.hpp"
#include "common/http/response_writer.hpp"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lanes::common::http {

struct server_config {
    std::size_t header_limit = 16 * 1024;     // request line + headers, bytes (over: 431)
    std::size_t body_limit = 8 * 1024 * 1024; // request body on the wire, bytes (over: 413)
    std::size_t chunk_extension_limit = 4096; // extensions of one request chunk (over: 400)
    // Most bytes of a chunk-size line or trailer section held at once (over: 400).
    std::size_t framing_buffer_limit = 64 * 1024;
    duration idle_timeout{60'000};        // keep-alive wait for the next request
    duration header_read_timeout{10'000}; // first byte -> end of headers
    duration body_read_timeout{30'000};   // end of headers -> end of body
    duration write_timeout{30'000};       // each response write (header or chunk)
    // After refusing a request whose bytes are still coming (a body or trailer past a limit),
    // the connection reads and drops them this long (and at most lingering_bytes) before it
    // closes, so the refusal is not lost to a TCP reset (nginx's lingering close).
    duration lingering_timeout{2'000};
    std::size_t lingering_bytes = 1 << 20;
    duration shutdown_grace{10'000}; // how long stop() lets in-flight requests run
    // A handler that asked to hear of its client leaving (on_client_closed) is watched from this
    // long after (up to twice it): a request answered sooner costs no watch. 0: at once.
    duration client_watch_delay{10};
    // Open client connections past which a new one is closed at once (0: no cap; the binaries
    // derive theirs from the file-descriptor limit, see raise_open_file_limit).
    std::size_t max_connections = 0;
    // Slots the process's descriptor table is grown to at start, at most the open-file limit
    // (see grow_descriptor_table). 0: the kernel grows it as descriptors are opened.
    std::size_t descriptor_table = 65536;
    // SO_REUSEPORT on the listener: other processes may listen on the same address and port,
    // and the kernel spreads new connections over them (several routers on one host, or a new
    // one started before the old one stops). Off: a second listener's bind fails.
    bool reuse_port = false;
    // Every request gets an id, sent back as x-request-id on every answer (refusals included):
    // the client's own x-request-id when acceptable_request_id() takes it, else a fresh one, and
    // then the client's value goes on to the handler as x-client-request-id. The handler reads
    // it from the request's x-request-id (or the writer's request_id()).
    bool request_ids = false;
    // Accepting pauses this long when the process is out of file descriptors (EMFILE, ENFILE,
    // ENOBUFS, ENOMEM), doubling up to accept_backoff_max while it stays so, instead of
    // retrying at once.
    duration accept_backoff{100};
    duration accept_backoff_max{1000};
    // A connection waiting for its next request keeps a read buffer and request storage of at
    // most this many bytes each; bigger ones (left by a big request) are given back.
    std::size_t idle_buffer_bytes = 64 * 1024;
    // TLS on every connection when both are set (PEM files: the certificate chain and its key);
    // re-read by reload_tls(). Otherwise plain HTTP.
    std::string tls_cert_file;
    std::string tls_key_file;
    duration tls_handshake_timeout{10'000}; // accept -> handshake done
    duration tls_close_timeout{1'000};      // our close_notify -> the client's
    // Threads running the io_context. With one, connections skip strands (nothing can run
    // concurrently), which saves a dispatch per I/O completion.
    unsigned threads = 1;
};

// A look at a request's header while its body is still to come (a server reads a whole request
// before its handler runs): the answer that refuses it, which the server sends before reading the
// body (and without a 100 Continue), then drops what else comes and closes; nullopt reads on.
// `peer` is the connection's address. Runs on the connection's thread.
using head_screen = std::function<std::optional<response>(const request& head,
                                                          const boost::asio::ip::address& peer)>;

class server {
public:
    server(boost::asio::io_context& io, server_config config, handler h, std::string name,
           error_writer errors = plain_error_page);
    ~server();
    server(const server&) = delete;
    server& operator=(const server&) = delete;

    // Spreads new connections round-robin over `workers`, io_contexts each run by one thread of
    // their own (see run_until_signal): a connection then lives on one thread and needs no
    // strand. Call before listen(). Without workers, connections stay on the server's io_context.
    void spread_over(std::vector<boost::asio::io_context*> workers);
    // Called after every answer (see answered_hook), on the connection's thread. Call before
    // listen().
    void on_answered(answered_hook hook);
    // Screens the header of every request whose body is still to come (head_screen). Call
    // before listen().
    void screen_heads(head_screen screen);
    // Binds and starts accepting; returns the bound port (port 0 picks a free one) and logs
    // "<name> listening on http(s)://host:port". Throws std::runtime_error when it cannot listen
    // (the message names the address and why) or cannot use the TLS certificate or key.
    unsigned short listen(const std::string& host, unsigned short port);
    // Stops accepting, closes idle keep-alive connections and lets requests in progress finish
    // (their connections close afterwards). Thread-safe; idempotent.
    void stop();
    // Reads the TLS certificate and key again (new connections get them; open ones keep theirs).
    // Returns "" when done or not TLS, else why the old ones stay (also logged).
    std::string reload_tls();
    // Destroys the listening socket once the io_contexts no longer run, before any of them is
    // destroyed (its io_context first, then the workers: a pending accept holds a socket of a
    // worker's). Not thread-safe: from main, after the run.
    void release_listener();
    std::size_t active_requests() const;
    std::size_t open_connections() const;
    // Connections closed at once because max_connections were open.
    std::uint64_t refused_connections() const;

    struct state; // shared with the accept loop

private:
    std::shared_ptr<state> state_;
};

// The process's open-file limit: the soft limit is raised to the hard one (logged, both).
struct fd_limits {
    std::uint64_t soft_before = 0, soft = 0, hard = 0;
};
fd_limits raise_open_file_limit();
// Grows the process's descriptor table to `slots` (at most the soft open-file limit) by
// opening a descriptor at slots - 1 and closing it; the kernel never shrinks the table. Without
// it the kernel grows the table while serving, doubling it each time a descriptor past its end
// is opened, and in a process with several threads each growth waits for an RCU grace period
// (10-25 ms on a VM), in which the thread that opened the descriptor serves nothing. Returns the
// table's size after, as /proc/self/status reports it (0 if it cannot be read).
std::size_t grow_descriptor_table(std::size_t slots);
// A connection cap that fits `soft` descriptors when each connection may hold `per_connection`
// of them (a proxy's client connection and its upstream one), `reserve` kept for the rest.
std::size_t fitting_max_connections(std::uint64_t soft, std::size_t per_connection,
                                    std::size_t reserve = 64);

} // namespace lanes::common::http
