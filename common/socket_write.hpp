// Writes for the HTTP server and client that first hand the socket what it takes at once, with no
// asynchronous operation: a small answer or upstream request fits the socket's send buffer and is
// done right there, with no handler, no deadline timer and no trip through the scheduler (as nginx
// writes). Only what the socket did not take goes through async_write, under the deadline.
#pragma once

#include "common/http_server.hpp"

#include <boost/beast/core/tcp_stream.hpp>

#include <cstddef>

namespace lanes::common::http {

// Puts the socket in non-blocking mode, which write_all's first attempt needs; call it on every
// socket write_all is used with (a socket re-created from a native handle loses the setting).
void prepare_for_write_all(boost::beast::tcp_stream& stream);

// Writes `count` buffers in full. `buffers` must outlive the call (a named array of the caller's).
boost::asio::awaitable<boost::system::error_code>
write_all(boost::beast::tcp_stream& stream, const boost::asio::const_buffer* buffers,
          std::size_t count, duration timeout);

} // namespace lanes::common::http
