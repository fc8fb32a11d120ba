#include "common/http/io/read_later.hpp"

#include "common/http/io/read_deadline.hpp"
#include "common/http/io/transport.hpp"

#include <boost/asio/append.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <utility>

namespace lanes::common::http {

namespace asio = boost::asio;
using boost::system::error_code;

namespace {

struct start_later {
    template <typename Handler>
    void operator()(Handler&& h, asio::ip::tcp::socket* socket, asio::mutable_buffer buffer,
                    const read_deadline* deadline) const {
        auto start = [socket, buffer, deadline, h = std::forward<Handler>(h)]() mutable {
            if (deadline && deadline->fired()) {
                // Completed through the handler's own executor, as the read would.
                asio::dispatch(asio::append(
                    std::move(h), error_code(asio::error::operation_aborted), std::size_t{0}));
                return;
            }
            socket->async_read_some(buffer, std::move(h));
        };
        // Posted through the io_context's own executor type when that is what the socket has
        // (the server's and the proxy's sockets): the type-erased executor's post costs more.
        const auto& ex = socket->get_executor();
        if (const auto* io = ex.target<asio::io_context::executor_type>())
            asio::post(*io, std::move(start));
        else
            asio::post(ex, std::move(start));
    }
};

} // namespace

asio::awaitable<std::tuple<error_code, std::size_t>>
read_some_later(asio::ip::tcp::socket& socket, asio::mutable_buffer buffer,
                const read_deadline* deadline) {
    auto token = asio::as_tuple(asio::use_awaitable);
    return asio::async_initiate<decltype(token), void(error_code, std::size_t)>(
        start_later{}, token, &socket, buffer, deadline);
}

asio::awaitable<std::tuple<error_code, std::size_t>>
read_some_later(transport& connection, asio::mutable_buffer buffer, const read_deadline* deadline) {
    if (connection.secure())
        return connection.read_secure_later(buffer, deadline);
    return read_some_later(connection.socket(), buffer, deadline);
}

} // namespace lanes::common::http
