// A response_writer without a socket, for testing handlers: it records what it is given, and its
// client can be made to leave (the on_client_closed hook runs, every later write fails).
#pragma once

#include "common/http/message.hpp"
#include "common/http/response_writer.hpp"

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <algorithm>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace lanes::common::http::test {

// A request as the server would hand it to a handler.
inline request make_request(beast_http::verb verb, std::string_view target, std::string body = {},
                            const header_list& fields = {}) {
    request req;
    const auto name = beast_http::to_string(verb);
    req.start(verb, std::string_view(name.data(), name.size()), target, 11);
    for (const auto& [n, v] : fields)
        req.add(n, v);
    req.body() = std::move(body);
    return req;
}

class fake_writer final : public response_writer {
public:
    int status = 0; // of the answer or the stream
    std::string content_type;
    header_list headers;
    std::string body; // a whole answer's, or a stream's bytes as the client gets them
    std::vector<std::string> writes; // a stream's writes, in order
    bool streamed = false;
    bool ended = false; // end_stream() was called
    int sends = 0;      // whole answers sent (more than one is a handler's bug)
    // The client leaves once this many stream writes went out (-1: never by itself).
    int leave_after_writes = -1;

    // The client goes away: the hook runs, later writes fail.
    void leave() {
        gone_ = true;
        if (auto hook = std::move(hook_)) {
            hook_ = nullptr;
            hook();
        }
    }
    bool hooked() const { return static_cast<bool>(hook_); }

    // The value of the first header called `name` (exact case), or "".
    std::string header(std::string_view name) const {
        for (const auto& [n, v] : headers)
            if (n == name)
                return v;
        return {};
    }

    using response_writer::send;
    boost::asio::awaitable<bool> send(beast_http::status s, std::string_view type,
                                      std::span<const header_view> h, std::string_view b) override {
        if (gone_)
            co_return false;
        ++sends;
        started_ = true;
        status = static_cast<int>(s);
        content_type = std::string(type);
        for (const auto& [n, v] : h)
            headers.emplace_back(std::string(n), std::string(v));
        body = std::string(b);
        co_return true;
    }
    boost::asio::awaitable<bool> begin_stream(beast_http::status s, std::string_view type,
                                              std::span<const header_view> h) override {
        if (gone_)
            co_return false;
        started_ = streamed = true;
        status = static_cast<int>(s);
        content_type = std::string(type);
        for (const auto& [n, v] : h)
            headers.emplace_back(std::string(n), std::string(v));
        co_return true;
    }
    boost::asio::awaitable<bool> write_chunk(std::string_view data) override {
        co_return record(std::string(data));
    }
    boost::asio::awaitable<bool> write_framed(std::string_view chunks) override {
        co_return record(std::string(chunks));
    }
    // write_framed_now takes at most this many bytes a call (nullopt: none, as a writer that
    // cannot write at once); what it takes is recorded as a write of its own.
    std::optional<std::size_t> takes_now;
    std::optional<std::size_t> write_framed_now(std::string_view chunks) override {
        if (gone_)
            return std::nullopt;
        if (!takes_now)
            return 0;
        const std::size_t n = std::min(*takes_now, chunks.size());
        if (n > 0)
            record(std::string(chunks.substr(0, n)));
        return n;
    }
    boost::asio::awaitable<bool> end_stream() override {
        if (gone_)
            co_return false;
        ended = true;
        co_return true;
    }
    void on_client_closed(std::function<void()> on_closed) override {
        hook_ = std::move(on_closed);
    }
    bool started() const override { return started_; }
    const boost::asio::ip::tcp::endpoint& remote() const override { return remote_; }

    boost::asio::ip::tcp::endpoint remote_{boost::asio::ip::make_address("127.0.0.1"), 40000};

private:
    bool record(std::string data) {
        if (gone_)
            return false;
        body += data;
        writes.push_back(std::move(data));
        if (leave_after_writes >= 0 && static_cast<int>(writes.size()) >= leave_after_writes)
            leave();
        return true;
    }

    bool gone_ = false;
    bool started_ = false;
    std::function<void()> hook_;
};

} // namespace lanes::common::http::test
