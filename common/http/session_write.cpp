// The answer side of one client connection (common/http_session.cpp has the reading, serving and
// the client-closed watch): whole responses, chunked streams, and the two-step socket writes both
// use.
#include "common/http/chunked.hpp"
#include "common/http/io/head_writer.hpp"
#include "common/http/session.hpp"

#include <array>
#include <charconv>

namespace lanes::common::http {

asio::awaitable<bool> session::send(response res) {
    if (broken_)
        co_return false;
    started_ = true;
    if (!keep_alive_ || st_->stopping.load())
        res.keep_alive(false);
    keep_alive_ = res.keep_alive();
    if (res.find(beast_http::field::server) == res.end())
        res.set(beast_http::field::server, server_header);
    res.prepare_payload();
    const std::string head = serialize_header(res);
    // A HEAD answer has the GET answer's header (Content-Length included) and no body.
    const std::string_view body = head_request_ ? std::string_view{} : std::string_view(res.body());
    const std::array<asio::const_buffer, 2> wire{asio::buffer(head), asio::buffer(body)};
    std::size_t written = 0;
    if (!write_at_once(wire.data(), wire.size(), written))
        co_await write_the_rest(wire.data(), wire.size(), written);
    co_return !broken_;
}

asio::awaitable<bool> session::send(beast_http::status status, std::string_view content_type,
                                    std::span<const header_view> headers, std::string_view body) {
    if (const auto sent = send_at_once(status, content_type, headers, body))
        co_return *sent;
    co_return co_await send_rest();
}

std::optional<bool> session::send_at_once(beast_http::status status, std::string_view content_type,
                                          std::span<const header_view> headers,
                                          std::string_view body) {
    if (broken_)
        return false;
    started_ = true;
    if (st_->stopping.load())
        keep_alive_ = false;
    const std::string_view reason = beast_http::obsolete_reason(status);
    // The literals below come to under 128 bytes; each header adds ": " and CR LF.
    std::size_t bound = 128 + reason.size() + server_header.size() + content_type.size();
    for (const auto& [name, value] : headers)
        bound += name.size() + value.size() + 4;
    // A small body is copied behind the head: one buffer is one send() (see write_now).
    const bool with_body = !head_request_ && body.size() <= copy_body_limit;
    if (with_body)
        bound += body.size();
    head_writer head(head_buffer_, bound);
    head.put(version_text(version_)).put(" ").put_number(static_cast<unsigned>(status));
    head.put(" ").put(reason).put("\r\nServer: ").put(server_header);
    head.put("\r\nContent-Type: ").put(content_type).put("\r\n");
    for (const auto& [name, value] : headers)
        head.put(name).put(": ").put(value).put("\r\n");
    head.put("Content-Length: ").put_number(body.size()).put("\r\n");
    // HTTP/1.1 keeps the connection unless told; HTTP/1.0 closes it unless told.
    if (!keep_alive_ && version_ >= 11)
        head.put("Connection: close\r\n");
    else if (keep_alive_ && version_ < 11)
        head.put("Connection: keep-alive\r\n");
    head.put("\r\n");
    if (head_request_) {
        body = {};
    } else if (with_body) {
        head.put(body);
        body = {};
    }
    rest_ = {asio::buffer(head.text()), asio::buffer(body)};
    rest_written_ = 0;
    if (write_at_once(rest_.data(), rest_.size(), rest_written_))
        return !broken_;
    return std::nullopt;
}

asio::awaitable<bool> session::send_rest() {
    co_await write_the_rest(rest_.data(), rest_.size(), rest_written_);
    co_return !broken_;
}

asio::awaitable<bool> session::begin_stream(beast_http::status status,
                                            std::string_view content_type,
                                            const header_list& headers) {
    if (broken_)
        co_return false;
    started_ = true;
    beast_http::response<beast_http::empty_body> res{status, version_};
    res.set(beast_http::field::server, server_header);
    res.set(beast_http::field::content_type, content_type);
    res.set(beast_http::field::cache_control, "no-cache");
    for (const auto& [name, value] : headers)
        res.set(name, value);
    // HTTP/1.0 has no chunked encoding: its stream is the bare bytes, ended by closing.
    chunked_ = version_ >= 11;
    if (st_->stopping.load() || !chunked_)
        keep_alive_ = false;
    res.keep_alive(keep_alive_);
    res.chunked(chunked_);
    beast_http::response_serializer<beast_http::empty_body> sr{res};
    stream_.expires_after(st_->cfg.write_timeout);
    auto [ec, n] = co_await beast_http::async_write_header(stream_, sr, use_tuple);
    if (ec)
        broken_ = true;
    co_return !ec;
}

asio::awaitable<bool> session::write_chunk(std::string_view data) {
    if (broken_)
        co_return false;
    if (data.empty())
        co_return true; // an empty chunk would end the body
    if (!chunked_) {
        const asio::const_buffer wire = asio::buffer(data.data(), data.size());
        std::size_t written = 0;
        if (!write_at_once(&wire, 1, written))
            co_await write_the_rest(&wire, 1, written);
        co_return !broken_;
    }
    // The chunk: its size in hex and CRLF, the data, CRLF.
    std::array<char, 20> size_line{};
    char* end = std::to_chars(size_line.data(), size_line.data() + 16, data.size(), 16).ptr;
    *end++ = '\r';
    *end++ = '\n';
    const std::array<asio::const_buffer, 3> wire{
        asio::buffer(size_line.data(), static_cast<std::size_t>(end - size_line.data())),
        asio::buffer(data.data(), data.size()), asio::buffer("\r\n", 2)};
    std::size_t written = 0;
    if (!write_at_once(wire.data(), wire.size(), written))
        co_await write_the_rest(wire.data(), wire.size(), written);
    co_return !broken_;
}

asio::awaitable<bool> session::write_framed(std::string_view chunks) {
    if (broken_)
        co_return false;
    if (chunks.empty())
        co_return true;
    if (!chunked_) {
        // Whole chunks in, their data out.
        chunk_decoder decoder;
        std::string data;
        bool error = false;
        decoder.decode(chunks, data, error);
        if (error) {
            broken_ = true;
            co_return false;
        }
        co_return co_await write_chunk(data);
    }
    const asio::const_buffer wire = asio::buffer(chunks.data(), chunks.size());
    std::size_t written = 0;
    if (!write_at_once(&wire, 1, written))
        co_await write_the_rest(&wire, 1, written);
    co_return !broken_;
}

asio::awaitable<bool> session::end_stream() {
    if (broken_)
        co_return false;
    if (!chunked_)
        co_return true; // closing the connection ends the body
    const asio::const_buffer wire = asio::buffer("0\r\n\r\n", 5); // the last chunk, no trailers
    std::size_t written = 0;
    if (!write_at_once(&wire, 1, written))
        co_await write_the_rest(&wire, 1, written);
    co_return !broken_;
}

bool session::write_at_once(const asio::const_buffer* wire, std::size_t count,
                            std::size_t& written) {
    const write_attempt w = write_now(stream_, wire, count);
    written = w.written;
    if (w.ec)
        broken_ = true;
    return w.done;
}

asio::awaitable<void> session::write_the_rest(const asio::const_buffer* wire, std::size_t count,
                                              std::size_t written) {
    const auto ec = co_await write_rest(stream_, wire, count, written, st_->cfg.write_timeout);
    if (ec)
        broken_ = true;
}

} // namespace lanes::common::http
