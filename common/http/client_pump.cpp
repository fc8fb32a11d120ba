// client_connection::pump_framed_chunks: a relay's read-and-send loop as one asynchronous
// operation, whose handler reads, sends and reads again without resuming a coroutine per event.
#include "common/http/client.hpp"

#include "common/http/io/read_later.hpp"
#include "common/http/io/transport.hpp"
#include "common/http/response_writer.hpp"

#include <boost/asio/async_result.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <optional>
#include <type_traits>
#include <utility>

namespace lanes::common::http {

namespace asio = boost::asio;
using boost::system::error_code;

struct client_connection::pump_access {
    // Sends the buffer's whole chunks: true when that settles the pump (`r` says how), false
    // when it needs more bytes.
    static bool take(client_connection& c, response_writer& out, std::size_t max_buffered,
                     pump_result& r) {
        std::string_view piece;
        while (c.take_buffered_chunks(piece, r.ec, max_buffered)) {
            if (r.ec)
                return true;
            const std::optional<std::size_t> sent =
                piece.empty() ? std::optional<std::size_t>(0) : out.write_framed_now(piece);
            if (!sent) {
                r.client_gone = true;
                return true;
            }
            if (*sent < piece.size() || c.body_done_) {
                r.rest = piece.substr(*sent);
                return true;
            }
            // All sent: what is left is the start of the next chunk.
        }
        return false;
    }

    // One pump in flight: reads, sends, reads again; completes `handler` when settled.
    template <typename Handler>
    struct pump {
        client_connection* conn;
        response_writer* out;
        duration idle_timeout;
        std::size_t max_buffered;
        pump_result result;
        Handler handler;

        // Each read starts behind the handlers already ready, as read_framed_chunks' do.
        void read_later() {
            client_connection& c = *conn;
            const asio::mutable_buffer buffer = c.prepare_chunks_read(idle_timeout, max_buffered);
            post_read_some(c.io_->socket(), buffer, &c.deadline_, std::move(*this));
        }
        // A read ended: sent on and read again, or settled.
        void operator()(error_code ec, std::size_t n) {
            result.ec = conn->chunk_bytes_read(ec, n);
            if (!result.ec && !take(*conn, *out, max_buffered, result))
                return read_later();
            asio::dispatch(asio::append(std::move(handler), std::move(result)));
        }
    };

    struct start {
        template <typename Handler>
        void operator()(Handler&& h, client_connection* conn, response_writer* out,
                        duration idle_timeout, std::size_t max_buffered) const {
            pump<std::decay_t<Handler>> p{conn,         out, idle_timeout,
                                          max_buffered, {},  std::forward<Handler>(h)};
            if (take(*conn, *out, max_buffered, p.result)) {
                // Settled by what was buffered: completed through a post, not inside the
                // initiation.
                auto r = std::move(p.result);
                asio::post(asio::append(std::move(p.handler), std::move(r)));
                return;
            }
            p.read_later();
        }
    };
};

asio::awaitable<client_connection::pump_result>
client_connection::pump_framed_chunks(response_writer& out, duration idle_timeout,
                                      std::size_t max_buffered) {
    return asio::async_initiate<decltype(asio::use_awaitable), void(pump_result)>(
        pump_access::start{}, asio::use_awaitable, this, &out, idle_timeout, max_buffered);
}

bool client_connection::pumpable() const {
    return !io_->secure();
}

} // namespace lanes::common::http
