// A socket read that starts only after the handlers the scheduler already has ready have run.
//
// Asio tries every read on the spot, before it waits for epoll: a keep-alive connection read
// right after its answer was written, or an upstream read right after the request went out, finds
// nothing yet, so that try is a wasted recvfrom (EAGAIN) and the read waits for epoll all the
// same. Behind the ready handlers the peer has had time to answer, and the same try usually
// finds the bytes, which saves a system call per read.
#pragma once

#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include <cstddef>
#include <tuple>

namespace lanes::common::http {

class read_deadline;
class transport;

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
