#include "common/http/io/socket_write.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>

#include <span>
#include <vector>

namespace lanes::common::http {

namespace asio = boost::asio;
using boost::system::error_code;

void prepare_for_write_now(transport& stream) {
    error_code ec;
    stream.socket().non_blocking(true, ec);
}

write_attempt write_now(transport& stream, const asio::const_buffer* buffers, std::size_t count) {
    const std::span<const asio::const_buffer> all(buffers, count);
    write_attempt w;
    if (stream.secure() || !stream.socket().non_blocking())
        return w; // not prepared: the asynchronous path does it all
    // Asio picks send() for a single buffer and sendmsg() for a sequence; sendmsg's iovec
    // handling costs the kernel more. An empty last buffer (a body copied into the head) is
    // left out.
    if (count == 1 || (count == 2 && buffers[1].size() == 0))
        w.written = stream.socket().write_some(buffers[0], w.ec);
    else
        w.written = stream.socket().write_some(all, w.ec);
    if (w.ec == asio::error::would_block || w.ec == asio::error::try_again)
        w.ec = {};
    w.done = w.ec || w.written == asio::buffer_size(all);
    return w;
}

asio::awaitable<error_code> write_rest(transport& stream, const asio::const_buffer* buffers,
                                       std::size_t count, std::size_t written, duration timeout) {
    if (written == 0) { // all of it (a secure connection's writes always come here)
        auto [ec, n] = co_await stream.write({buffers, count}, timeout);
        co_return ec;
    }
    // The buffers past the first `written` bytes.
    std::vector<asio::const_buffer> rest;
    for (const auto& b : std::span<const asio::const_buffer>(buffers, count)) {
        if (written >= b.size()) {
            written -= b.size();
            continue;
        }
        rest.push_back(b + written);
        written = 0;
    }
    auto [ec, n] = co_await stream.write(rest, timeout);
    co_return ec;
}

} // namespace lanes::common::http
