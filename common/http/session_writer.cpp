#include "common/http/session_writer.hpp"

#include "common/http/chunked.hpp"
#include "common/http/field_syntax.hpp"
#include "common/http/io/head_writer.hpp"
#include "common/http/io/socket_write.hpp"

#include <algorithm>
#include <charconv>

namespace lanes::common::http {

namespace asio = boost::asio;

namespace {

// Whether `headers` has a field called `name` (any case).
bool has_field(std::span<const header_view> headers, std::string_view name) {
    return std::any_of(headers.begin(), headers.end(),
                       [name](const header_view& h) { return syntax::iequals(h.first, name); });
}

constexpr std::string_view request_id_field = "x-request-id";

} // namespace

void session_writer::start(unsigned version, bool keep_alive, bool head_request) {
    version_ = version;
    keep_alive_ = keep_alive;
    head_request_ = head_request;
    started_ = false;
}

asio::awaitable<bool> session_writer::send(beast_http::status status, std::string_view content_type,
                                           std::span<const header_view> headers,
                                           std::string_view body) {
    if (broken_)
        co_return false;
    started_ = true;
    if (stopping_.load())
        keep_alive_ = false;
    const std::string_view reason = beast_http::obsolete_reason(status);
    // The literals below come to under 128 bytes; each header adds ": " and CR LF.
    std::size_t bound = 128 + reason.size() + server_header.size() + content_type.size();
    for (const auto& [name, value] : headers)
        bound += name.size() + value.size() + 4;
    const bool add_id = !request_id_.empty() && !has_field(headers, request_id_field);
    if (add_id)
        bound += request_id_field.size() + request_id_.size() + 4;
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
    if (add_id)
        head.put(request_id_field).put(": ").put(request_id_).put("\r\n");
    // A HEAD answer has the GET answer's header (Content-Length included) and no body.
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
    const std::array<asio::const_buffer, 2> wire{asio::buffer(head.text()), asio::buffer(body)};
    std::size_t written = 0;
    if (!write_at_once(wire.data(), wire.size(), written))
        co_await write_the_rest(wire.data(), wire.size(), written);
    co_return !broken_;
}

asio::awaitable<bool> session_writer::begin_stream(beast_http::status status,
                                                   std::string_view content_type,
                                                   std::span<const header_view> headers) {
    if (broken_)
        co_return false;
    started_ = true;
    // HTTP/1.0 has no chunked encoding: its stream is the bare bytes, ended by closing.
    chunked_ = version_ >= 11;
    if (stopping_.load() || !chunked_)
        keep_alive_ = false;
    const std::string_view reason = beast_http::obsolete_reason(status);
    std::size_t bound = 160 + reason.size() + server_header.size() + content_type.size();
    for (const auto& [name, value] : headers)
        bound += name.size() + value.size() + 4;
    const bool add_id = !request_id_.empty() && !has_field(headers, request_id_field);
    if (add_id)
        bound += request_id_field.size() + request_id_.size() + 4;
    head_writer head(head_buffer_, bound);
    head.put(version_text(version_)).put(" ").put_number(static_cast<unsigned>(status));
    head.put(" ").put(reason).put("\r\nServer: ").put(server_header);
    head.put("\r\nContent-Type: ").put(content_type).put("\r\n");
    // A stream is not to be cached, unless the answer relayed says how it may be.
    if (std::none_of(headers.begin(), headers.end(), [](const header_view& h) {
            return syntax::iequals(h.first, "cache-control");
        }))
        head.put("Cache-Control: no-cache\r\n");
    for (const auto& [name, value] : headers)
        head.put(name).put(": ").put(value).put("\r\n");
    if (add_id)
        head.put(request_id_field).put(": ").put(request_id_).put("\r\n");
    if (chunked_)
        head.put("Transfer-Encoding: chunked\r\n");
    if (!keep_alive_ && version_ >= 11)
        head.put("Connection: close\r\n");
    head.put("\r\n");
    const asio::const_buffer wire = asio::buffer(head.text());
    std::size_t written = 0;
    if (!write_at_once(&wire, 1, written))
        co_await write_the_rest(&wire, 1, written);
    co_return !broken_;
}

asio::awaitable<bool> session_writer::write_chunk(std::string_view data) {
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

asio::awaitable<bool> session_writer::write_framed(std::string_view chunks) {
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

std::optional<std::size_t> session_writer::write_framed_now(std::string_view chunks) {
    if (broken_)
        return std::nullopt;
    if (!chunked_ || chunks.empty())
        return 0; // (an HTTP/1.0 client gets the chunks' data: write_framed decodes them)
    const asio::const_buffer wire = asio::buffer(chunks.data(), chunks.size());
    std::size_t written = 0;
    write_at_once(&wire, 1, written); // none on a secure connection
    if (broken_)
        return std::nullopt;
    return written;
}

asio::awaitable<bool> session_writer::end_stream() {
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

bool session_writer::write_at_once(const asio::const_buffer* wire, std::size_t count,
                                   std::size_t& written) {
    const write_attempt w = write_now(stream_, wire, count);
    written = w.written;
    if (w.ec)
        broken_ = true;
    return w.done;
}

asio::awaitable<void> session_writer::write_the_rest(const asio::const_buffer* wire,
                                                     std::size_t count, std::size_t written) {
    const auto ec = co_await write_rest(stream_, wire, count, written, write_timeout_);
    if (ec)
        broken_ = true;
}

} // namespace lanes::common::http
