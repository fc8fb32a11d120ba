#include "common/http/fetch.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <chrono>

namespace lanes::common::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
using boost::system::error_code;

namespace {

// The request fetch sends, with `Connection: close` unless the connection is to be kept.
outgoing_request fetch_request(const url& target, beast_http::verb method, std::string_view path,
                               const fetch_options& options) {
    outgoing_request req{method, target.base_path + std::string(path), 11};
    req.set(beast_http::field::user_agent, "lanes");
    if (!options.body.empty() || method == beast_http::verb::post) {
        req.set(beast_http::field::content_type, options.content_type);
        req.body() = options.body;
    }
    for (const auto& [name, value] : options.headers) // the caller's fields win
        req.set(name, value);
    req.keep_alive(options.keep_alive);
    return req;
}

} // namespace

asio::awaitable<fetch_result> fetch_on(std::unique_ptr<client_connection>& conn,
                                       asio::any_io_executor ex, const url& target,
                                       beast_http::verb method, std::string_view path,
                                       const fetch_options& options) {
    fetch_result result;
    const auto deadline = std::chrono::steady_clock::now() + options.total_timeout;
    auto left = [&] {
        return std::max(duration{1}, std::chrono::duration_cast<duration>(
                                         deadline - std::chrono::steady_clock::now()));
    };
    bool reused = conn && conn->is_open();
    if (reused)
        conn->rebind(ex);
    // The request is sent at most twice: a kept connection may have been closed by the server
    // while it sat idle, which shows only when it is used; then a fresh one is tried.
    for (;;) {
        if (!reused) {
            conn = std::make_unique<client_connection>(ex);
            const duration connect_timeout = std::min(options.connect_timeout, left());
            if ((result.ec = co_await conn->connect(target, connect_timeout)))
                co_return result;
        }
        result.connected = true;
        outgoing_request req = fetch_request(target, method, path, options);
        result.ec = co_await conn->write(req, left());
        if (!result.ec)
            result.ec = co_await conn->read_header(left());
        if (!result.ec)
            break;
        conn->close();
        // Sent again only when nothing came back and the method may be repeated.
        const bool repeatable = method == beast_http::verb::get || method == beast_http::verb::head;
        if (!reused || !repeatable || !closed_while_idle(result.ec))
            co_return result;
        reused = false;
    }
    const response_head& head = conn->head();
    result.status = head.status();
    result.content_type = std::string(head.field("content-type"));
    for (std::size_t i = 0; i < head.field_count(); ++i)
        result.headers.emplace_back(std::string(head.name(i)), std::string(head.value(i)));
    std::string piece;
    while (!conn->done()) {
        if ((result.ec = co_await conn->read_chunk(piece, left()))) {
            conn->close();
            co_return result;
        }
        if (result.body.size() + piece.size() > options.body_limit) {
            result.ec = beast_http::error::body_limit;
            conn->close();
            co_return result;
        }
        result.body += piece;
    }
    if (!options.keep_alive || !conn->reusable())
        conn->close();
    co_return result;
}

asio::awaitable<fetch_result> fetch(asio::any_io_executor ex, const url& target,
                                    beast_http::verb method, std::string_view path,
                                    const fetch_options& options) {
    std::unique_ptr<client_connection> conn;
    co_return co_await fetch_on(conn, ex, target, method, path, options);
}

fetch_result fetch_blocking(const url& target, beast_http::verb method, std::string_view path,
                            const fetch_options& options) {
    asio::io_context io;
    fetch_result res;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            res = co_await fetch(io.get_executor(), target, method, path, options);
        },
        asio::detached);
    io.run();
    return res;
}

} // namespace lanes::common::http
