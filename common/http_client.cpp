#include "common/http_client.hpp"

#include "common/chunked.hpp"

#include <boost/asio.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <charconv>

namespace lanes::common::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using boost::system::error_code;

namespace {
constexpr auto use_tuple = asio::as_tuple(asio::use_awaitable);
constexpr std::size_t chunk_buffer_size = 16 * 1024;
constexpr std::uint32_t response_header_limit = 64 * 1024;
} // namespace

std::string url::authority() const {
    const bool v6 = host.find(':') != std::string::npos;
    return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string url::str() const {
    return "http://" + authority() + base_path;
}

std::optional<url> parse_url(std::string_view text, std::string* error) {
    auto fail = [&](std::string why) -> std::optional<url> {
        if (error)
            *error = "invalid URL '" + std::string(text) + "': " + why;
        return std::nullopt;
    };
    std::string_view rest = text;
    if (rest.starts_with("https://"))
        return fail("https is not supported; put TLS in front of lanes or use http://");
    if (rest.starts_with("http://"))
        rest.remove_prefix(7);
    else if (rest.find("://") != std::string_view::npos)
        return fail("only http:// URLs are supported");
    url u;
    const auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    if (slash != std::string_view::npos) {
        std::string_view path = rest.substr(slash);
        while (path.ends_with('/'))
            path.remove_suffix(1);
        u.base_path = std::string(path);
    }
    std::string_view port_text;
    if (authority.starts_with('[')) {
        const auto close = authority.find(']');
        if (close == std::string_view::npos)
            return fail("unterminated IPv6 address");
        u.host = std::string(authority.substr(1, close - 1));
        if (close + 1 < authority.size()) {
            if (authority[close + 1] != ':')
                return fail("expected ':' after IPv6 address");
            port_text = authority.substr(close + 2);
        }
    } else {
        const auto colon = authority.rfind(':');
        u.host = std::string(authority.substr(0, colon));
        if (colon != std::string_view::npos)
            port_text = authority.substr(colon + 1);
    }
    if (u.host.empty())
        return fail("missing host");
    if (!port_text.empty()) {
        unsigned value = 0;
        auto [p, ec] =
            std::from_chars(port_text.data(), port_text.data() + port_text.size(), value);
        if (ec != std::errc{} || p != port_text.data() + port_text.size() || value == 0 ||
            value > 65535)
            return fail("bad port '" + std::string(port_text) + "'");
        u.port = static_cast<unsigned short>(value);
    }
    return u;
}

client_connection::client_connection(asio::any_io_executor ex)
    : stream_(std::in_place, std::move(ex)) {}

asio::awaitable<error_code> client_connection::connect(const url& target, duration timeout) {
    target_ = target;
    tcp::resolver resolver(stream_->get_executor());
    auto [rec, results] =
        co_await resolver.async_resolve(target_.host, std::to_string(target_.port), use_tuple);
    if (rec)
        co_return rec;
    stream_->expires_after(timeout);
    auto [ec, ep] = co_await stream_->async_connect(results, use_tuple);
    if (ec)
        co_return ec;
    stream_->socket().set_option(tcp::no_delay(true));
    open_ = true;
    buffer_.clear();
    co_return error_code{};
}

bool client_connection::is_open() const {
    return open_ && stream_->socket().is_open();
}

void client_connection::rebind(asio::any_io_executor ex) {
    if (stream_->get_executor() == ex)
        return;
    error_code ec;
    const auto protocol = stream_->socket().local_endpoint(ec).protocol();
    if (ec || !stream_->socket().is_open()) {
        open_ = false;
        stream_.emplace(std::move(ex));
        return;
    }
    const auto native = stream_->socket().release(ec);
    if (ec) {
        close();
        return;
    }
    stream_.emplace(tcp::socket(std::move(ex), protocol, native));
}

void client_connection::close() {
    error_code ec;
    stream_->socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_->socket().close(ec);
    open_ = false;
}

asio::awaitable<error_code> client_connection::write(request& req, duration timeout) {
    if (req.find(beast_http::field::host) == req.end())
        req.set(beast_http::field::host, target_.authority());
    req.prepare_payload();
    const std::string head = serialize_header(req);
    co_return co_await write_raw(head, req.body(), timeout);
}

asio::awaitable<error_code> client_connection::write_raw(std::string_view head,
                                                         std::string_view body, duration timeout) {
    parser_.reset();
    framed_done_ = false;
    const std::array<asio::const_buffer, 2> wire{asio::buffer(head), asio::buffer(body)};
    stream_->expires_after(timeout);
    auto [ec, n] = co_await asio::async_write(*stream_, wire, use_tuple);
    if (ec)
        open_ = false;
    co_return ec;
}

// Both readers parse what is already buffered with the parser's put and read from the socket only
// when that is not enough: a small response usually arrives whole in one read, and Beast's
// composed read operations cost more than the parsing itself.
asio::awaitable<error_code> client_connection::read_header(duration timeout) {
    parser_.emplace();
    parser_->header_limit(response_header_limit);
    parser_->body_limit(boost::none); // streamed through, never held whole
    stream_->expires_after(timeout);  // one deadline for the whole header
    for (;;) {
        if (buffer_.size() > 0) {
            error_code ec;
            buffer_.consume(parser_->put(buffer_.data(), ec));
            if (!ec) {
                keep_alive_ = parser_->get().keep_alive(); // parsed once, not per question
                co_return error_code{};
            }
            if (ec != beast_http::error::need_more) {
                open_ = false;
                co_return ec;
            }
        }
        auto [ec, n] =
            co_await stream_->async_read_some(buffer_.prepare(chunk_buffer_size), use_tuple);
        if (ec) {
            open_ = false;
            if (ec == asio::error::eof)
                co_return buffer_.size() == 0 ? beast_http::error::end_of_stream
                                              : beast_http::error::partial_message;
            co_return ec;
        }
        buffer_.commit(n);
    }
}

const beast_http::response_header<>& client_connection::header() const {
    return parser_->get().base();
}

asio::awaitable<error_code> client_connection::read_chunk(std::string& out, duration idle_timeout) {
    out.clear();
    while (!parser_->is_done()) {
        auto& body = parser_->get().body();
        if (!chunk_) // taken on first use, uninitialised: most connections never need it
            chunk_ = std::make_unique_for_overwrite<char[]>(chunk_buffer_size);
        body.data = chunk_.get();
        body.size = chunk_buffer_size;
        if (buffer_.size() > 0) {
            error_code ec;
            const std::size_t used = parser_->put(buffer_.data(), ec);
            buffer_.consume(used);
            if (ec == beast_http::error::need_buffer || ec == beast_http::error::need_more)
                ec = {};
            if (ec) {
                open_ = false;
                co_return ec;
            }
            const std::size_t got = chunk_buffer_size - parser_->get().body().size;
            if (got > 0) {
                out.assign(chunk_.get(), got);
                co_return error_code{};
            }
            if (used > 0)
                continue; // framing only (a chunk's size line): parse on
        }
        stream_->expires_after(idle_timeout);
        auto [ec, n] =
            co_await stream_->async_read_some(buffer_.prepare(chunk_buffer_size), use_tuple);
        if (ec == asio::error::eof) { // the end of a body that runs to the close, or a cut
            open_ = false;
            error_code eof_ec;
            parser_->put_eof(eof_ec);
            if (eof_ec)
                co_return eof_ec;
            continue;
        }
        if (ec) {
            open_ = false;
            co_return ec;
        }
        buffer_.commit(n);
    }
    co_return error_code{};
}

bool client_connection::done() const {
    return parser_ && (parser_->is_done() || framed_done_);
}

bool client_connection::chunked() const {
    return parser_ && parser_->is_header_done() && parser_->chunked();
}

asio::awaitable<error_code> client_connection::read_framed_chunks(std::string& out,
                                                                  duration idle_timeout,
                                                                  std::size_t max_buffered) {
    out.clear();
    // Beast's parser has read the header; the body's bytes are taken from the buffer here.
    for (;;) {
        const std::string_view data(static_cast<const char*>(buffer_.data().data()),
                                    buffer_.size());
        const chunk_scan s = scan_chunks(data);
        if (s.error) {
            open_ = false;
            co_return beast_http::error::bad_chunk;
        }
        if (s.complete > 0 || s.last) {
            out.assign(data.substr(0, s.complete));
            buffer_.consume(s.consumed);
            framed_done_ = s.last;
            co_return error_code{};
        }
        if (buffer_.size() >= max_buffered) {
            open_ = false;
            co_return beast_http::error::buffer_overflow;
        }
        stream_->expires_after(idle_timeout);
        auto [ec, n] = co_await stream_->async_read_some(
            buffer_.prepare(std::min(chunk_buffer_size, max_buffered - buffer_.size())), use_tuple);
        if (ec) {
            open_ = false;
            co_return ec == asio::error::eof ? beast_http::error::partial_message : ec;
        }
        buffer_.commit(n);
    }
}

bool client_connection::reusable() const {
    return is_open() && done() && keep_alive_;
}

asio::awaitable<fetch_result> fetch(asio::any_io_executor ex, const url& target,
                                    beast_http::verb method, std::string_view path,
                                    const fetch_options& options) {
    fetch_result result;
    client_connection conn(ex);
    result.ec = co_await conn.connect(target, options.connect_timeout);
    if (result.ec)
        co_return result;
    const auto deadline = std::chrono::steady_clock::now() + options.total_timeout;
    auto left = [&] {
        return std::max(duration{1}, std::chrono::duration_cast<duration>(
                                         deadline - std::chrono::steady_clock::now()));
    };
    request req{method, target.base_path + std::string(path), 11};
    req.set(beast_http::field::user_agent, "lanes");
    for (const auto& [name, value] : options.headers)
        req.set(name, value);
    if (!options.body.empty() || method == beast_http::verb::post) {
        req.set(beast_http::field::content_type, options.content_type);
        req.body() = options.body;
    }
    req.keep_alive(false);
    if ((result.ec = co_await conn.write(req, left())))
        co_return result;
    if ((result.ec = co_await conn.read_header(left())))
        co_return result;
    result.status = static_cast<int>(conn.header().result_int());
    result.content_type = std::string(conn.header()[beast_http::field::content_type]);
    for (const auto& field : conn.header())
        result.headers.emplace_back(std::string(field.name_string()), std::string(field.value()));
    std::string piece;
    while (!conn.done()) {
        if ((result.ec = co_await conn.read_chunk(piece, left())))
            co_return result;
        if (result.body.size() + piece.size() > options.body_limit) {
            result.ec = beast_http::error::body_limit;
            co_return result;
        }
        result.body += piece;
    }
    conn.close();
    co_return result;
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
