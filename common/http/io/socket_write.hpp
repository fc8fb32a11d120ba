// Writes for the HTTP server and client that first hand the socket what it takes at once, with no
// asynchronous operation: a small answer or upstream request fits the socket's send buffer and is
// done right there, with no handler, no deadline timer and no trip through the scheduler (as nginx
// writes). Only what the socket did not take goes through async_write, under the deadline.
#pragma once

#include "common/http/message.hpp"

#include "common/http/io/transport.hpp"

#include <cstddef>

namespace lanes::common::http {

// Bodies up to this size are copied behind their head and written with it as one buffer (one
// send() where a head and a body are a sendmsg() with two iovecs, which costs the kernel more
// than copying a few KB).
inline constexpr std::size_t copy_body_limit = 4096;

// Puts the socket in non-blocking mode, which write_now needs; call it on every socket written
// this way (a socket re-created from a native handle loses the setting). On a secure connection
// write_now takes nothing (TLS records are written by the ssl_stream) and write_rest does it all.
void prepare_for_write_now(transport& stream);

// A write in two steps, so that the common case costs no coroutine frame either:
//     auto w = write_now(stream, buffers, count);
//     if (!w.done)
//         w.ec = co_await write_rest(stream, buffers, count, w.written, timeout);
// `buffers` must outlive both (a named array of the caller's).
struct write_attempt {
    bool done = false;       // all written, or failed (ec): nothing for write_rest
    std::size_t written = 0; // bytes the socket took
    boost::system::error_code ec;
};
write_attempt write_now(transport& stream, const boost::asio::const_buffer* buffers,
                        std::size_t count);
boost::asio::awaitable<boost::system::error_code>
write_rest(transport& stream, const boost::asio::const_buffer* buffers, std::size_t count,
           std::size_t written, duration timeout);

} // namespace lanes::common::http
