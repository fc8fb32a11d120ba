#include "common/socket_write.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <span>
#include <vector>

namespace lanes::common::http {

namespace asio = boost::asio;
using boost::system::error_code;

void prepare_for_write_all(boost::beast::tcp_stream& stream) {
    error_code ec;
    stream.socket().non_blocking(true, ec);
}

asio::awaitable<error_code> write_all(boost::beast::tcp_stream& stream,
                                      const asio::const_buffer* buffers, std::size_t count,
                                      duration timeout) {
    const std::span<const asio::const_buffer> all(buffers, count);
    error_code ec;
    std::size_t written = 0;
    if (stream.socket().non_blocking())
        written = stream.socket().write_some(all, ec);
    else
        ec = asio::error::would_block; // not prepared: the asynchronous path does it all
    if (ec && ec != asio::error::would_block && ec != asio::error::try_again)
        co_return ec;
    if (!ec && written == asio::buffer_size(all))
        co_return error_code{};
    // The rest: the buffers past the first `written` bytes.
    std::vector<asio::const_buffer> rest;
    for (const auto& b : all) {
        if (written >= b.size()) {
            written -= b.size();
            continue;
        }
        rest.push_back(b + written);
        written = 0;
    }
    stream.expires_after(timeout);
    auto [wec, n] = co_await asio::async_write(stream, rest, asio::as_tuple(asio::use_awaitable));
    co_return wec;
}

} // namespace lanes::common::http
