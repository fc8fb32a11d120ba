// A deadline for reads on one socket, kept by one timer that is re-armed lazily: a read that moves
// the deadline later does not touch the timer, which on waking sleeps again until the deadline in
// force. So a keep-alive request or a streamed token arms and cancels no timer, where Beast's
// tcp_stream arms one around every read. Used by the HTTP server (keep-alive idle) and client
// (time to first byte, stream idle).
#pragma once

#include "common/http/message.hpp"

#include <boost/asio/ip/tcp.hpp>
#include <boost/system/error_code.hpp>

#include <memory>

namespace lanes::common::http {

class read_deadline {
public:
    read_deadline() = default;
    read_deadline(const read_deadline&) = delete;
    read_deadline& operator=(const read_deadline&) = delete;
    ~read_deadline() { release(); }

    // A read on `socket` is about to start: it must end within `timeout`, or the socket's
    // operations are cancelled. The timer runs on the socket's executor: a socket moved to
    // another executor (re-created in place, say) must be announced with abandon() first.
    void start(boost::asio::ip::tcp::socket& socket, duration timeout);
    // The read ended: an expiry now cancels nothing.
    void stop();
    // The read's result, with a cancellation by this deadline reported as Beast's timeout.
    boost::system::error_code result(boost::system::error_code ec) const;
    // The deadline of the read in progress has passed and cancelled what the socket had pending
    // (a read that starts after that must not wait: see read_some_later).
    bool fired() const;
    // The socket closes or goes away: cancels the timer (a pending wait would keep its
    // io_context's run() going until the deadline). Call it where the socket's thread, or no
    // thread, runs that io_context.
    void release();
    // The socket moves to another thread's io_context: the timer is let go, its wait cancelled
    // by a handler posted to its own executor.
    void abandon();

private:
    struct state; // shared with the timer's handler, which may run after the read is over
    std::shared_ptr<state> state_;
};

} // namespace lanes::common::http
