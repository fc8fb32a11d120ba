// The main loop of a server binary: run the io_context on several threads until SIGINT/SIGTERM,
// then drain with a deadline.
#pragma once

#include "common/http/message.hpp"

#include <boost/asio/io_context.hpp>

#include <functional>
#include <vector>

namespace lanes::common::http {

// What happens between the signal and the drain.
struct shutdown_steps {
    std::function<void()> on_notice; // at once (a router turns its readiness off)
    duration delay{0};               // then this long of serving as usual, then on_signal
    // On SIGHUP, each time (on `io`'s thread): re-read what can be re-read. Unset: SIGHUP is left
    // as it was.
    std::function<void()> on_hangup;
};

// Runs `io` on `threads` threads until SIGINT/SIGTERM, then calls `on_signal` (which should stop
// the servers and background work), waits up to `grace` for `is_drained()` and stops `io`.
// Returns the process exit code (0).
int run_until_signal(boost::asio::io_context& io, unsigned threads, duration grace,
                     std::function<void()> on_signal, std::function<bool()> is_drained,
                     const shutdown_steps& steps = {});

// The same with `io` on the calling thread and each of `workers` on a thread of its own (kept
// running while idle); every one of them stops with `io`.
int run_until_signal(boost::asio::io_context& io,
                     const std::vector<boost::asio::io_context*>& workers, duration grace,
                     std::function<void()> on_signal, std::function<bool()> is_drained,
                     const shutdown_steps& steps = {});

} // namespace lanes::common::http
