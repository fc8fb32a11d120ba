// The answer side of one client connection: whole responses, and streams sent chunked (or, to an
// HTTP/1.0 client, as bare bytes ended by the close). Every write first hands the socket what it
// takes at once (io/socket_write.hpp); only a rest is awaited, under the write deadline. A write
// that fails marks the connection broken, and every later call then returns false.
#pragma once

#include "common/http/io/transport.hpp"
#include "common/http/message.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/buffer.hpp>

#include <array>
#include <atomic>
#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>

namespace lanes::common::http {

class session_writer {
public:
    // `stopping`: the server's flag; once set, no answer keeps its connection.
    session_writer(transport& stream, duration write_timeout, const std::atomic<bool>& stopping)
        : stream_(stream)
        , write_timeout_(write_timeout)
        , stopping_(stopping) {}

    // A request is about to be answered: its HTTP version (10 or 11), whether it keeps the
    // connection, and whether it is a HEAD (whose answer has no body).
    void start(unsigned version, bool keep_alive, bool head_request);
    // Sent as x-request-id on the answer, unless its headers have one; empty: none. The text
    // must outlive the answer.
    void set_request_id(std::string_view id) { request_id_ = id; }

    boost::asio::awaitable<bool> send(beast_http::status status, std::string_view content_type,
                                      std::span<const header_view> headers, std::string_view body);
    boost::asio::awaitable<bool> begin_stream(beast_http::status status,
                                              std::string_view content_type,
                                              std::span<const header_view> headers);
    boost::asio::awaitable<bool> write_chunk(std::string_view data);
    boost::asio::awaitable<bool> write_framed(std::string_view chunks);
    // response_writer::write_framed_now: a chunked stream on a plain connection only.
    std::optional<std::size_t> write_framed_now(std::string_view chunks);
    boost::asio::awaitable<bool> end_stream();

    bool started() const { return started_; }
    bool broken() const { return broken_; }
    void mark_broken() { broken_ = true; }
    // Whether the connection stays open after this answer.
    bool keep_alive() const { return keep_alive_; }
    void close_after() { keep_alive_ = false; }

private:
    // One write as two steps: what the socket takes now (true when nothing is left), then, only
    // when needed, a coroutine for the rest. Kept apart so that a write the socket takes whole
    // costs no coroutine frame of its own.
    bool write_at_once(const boost::asio::const_buffer* wire, std::size_t count,
                       std::size_t& written);
    boost::asio::awaitable<void> write_the_rest(const boost::asio::const_buffer* wire,
                                                std::size_t count, std::size_t written);

    transport& stream_;
    const duration write_timeout_;
    const std::atomic<bool>& stopping_;
    unsigned version_ = 11;
    bool keep_alive_ = true;
    bool head_request_ = false;
    bool started_ = false;
    bool broken_ = false;
    bool chunked_ = true;     // the stream being sent is chunked (not to an HTTP/1.0 client)
    std::string head_buffer_; // a whole response's head, kept for the next one
    std::string_view request_id_;
};

} // namespace lanes::common::http
