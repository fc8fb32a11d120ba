#include "common/http/io/read_later.hpp"

#include "common/http/io/transport.hpp"

#include <boost/asio/as_tuple.hpp>
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
        post_read_some(*socket, buffer, deadline, std::forward<Handler>(h));
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
