// A socket read that starts only after the handlers the scheduler already has ready have run.
//
// Asio tries every read on the spot, before it waits for epoll: a keep-alive connection read
// right after its answer was written, or an upstream read right after the request went out, finds
// nothing yet, so that try is a wasted recvfrom (EAGAIN) and the read waits for epoll all the
// same. Behind the ready handlers the peer has had time to answer, and the same try usually
// finds the bytes, which saves a system call per read.
#pragma once

#include "common/http/io/read_deadline.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <tuple>
#include <utility>

namespace lanes::common::http {

class transport;

// The start of such a read for any completion handler (a composed operation's own, say):
// async_read_some(buffer, handler) posted behind the ready handlers, or `handler` completed with
// operation_aborted if `deadline` (when given, already started) fired before the read started.
template <typename Handler>
void post_read_some(boost::asio::ip::tcp::socket& socket, boost::asio::mutable_buffer buffer,
                    const read_deadline* deadline, Handler&& handler) {
    namespace asio = boost::asio;
    auto start = [&socket, buffer, deadline, h = std::forward<Handler>(handler)]() mutable {
        if (deadline && deadline->fired()) {
            // Completed through the handler's own executor, as the read would.
            asio::dispatch(asio::append(std::move(h),
                                        boost::system::error_code(asio::error::operation_aborted),
                                        std::size_t{0}));
            return;
        }
        socket.async_read_some(buffer, std::move(h));
    };
    // Posted through the io_context's own executor type when that is what the socket has (the
    // server's and the proxy's sockets): the type-erased executor's post costs more.
    const auto& ex = socket.get_executor();
    if (const auto* io = ex.template target<asio::io_context::executor_type>())
        asio::post(*io, std::move(start));
    else
        asio::post(ex, std::move(start));
}

// async_read_some on `socket` into `buffer`, started behind the ready handlers. `deadline`, when
// given, is the read's deadline, already started: if it fires before the read starts, the read
// ends at once with operation_aborted (the deadline's result() makes that a timeout) rather than
// wait with nothing left to cancel it. The socket must outlive the read.
boost::asio::awaitable<std::tuple<boost::system::error_code, std::size_t>>
read_some_later(boost::asio::ip::tcp::socket& socket, boost::asio::mutable_buffer buffer,
                const read_deadline* deadline);
// The same on a connection: through TLS when it is secure (the deadline is on its socket).
boost::asio::awaitable<std::tuple<boost::system::error_code, std::size_t>>
read_some_later(transport& connection, boost::asio::mutable_buffer buffer,
                const read_deadline* deadline);

} // namespace lanes::common::http
