#include "common/run_loop.hpp"

#include "common/log.hpp"

#include <boost/asio.hpp>

#include <csignal>
#include <thread>
#include <vector>

namespace lanes::common::http {

namespace asio = boost::asio;

int run_until_signal(asio::io_context& io, unsigned threads, duration grace,
                     std::function<void()> on_signal, std::function<bool()> is_drained) {
    asio::signal_set signals(io, SIGINT, SIGTERM);
    asio::steady_timer drain_timer(io);
    const auto drain_poll = std::chrono::milliseconds(20);
    std::function<void(std::chrono::steady_clock::time_point)> poll_drain =
        [&](std::chrono::steady_clock::time_point deadline) {
            if (is_drained() || std::chrono::steady_clock::now() >= deadline) {
                io.stop();
                return;
            }
            drain_timer.expires_after(drain_poll);
            drain_timer.async_wait([&, deadline](boost::system::error_code ec) {
                if (!ec)
                    poll_drain(deadline);
            });
        };
    signals.async_wait([&](boost::system::error_code ec, int sig) {
        if (ec)
            return;
        LANES_LOG(info, "main",
                  "signal " << sig << ": draining (up to " << grace.count()
                            << " ms); send it again to stop at once");
        signals.async_wait([&](boost::system::error_code ec2, int) {
            if (!ec2)
                io.stop();
        });
        on_signal();
        poll_drain(std::chrono::steady_clock::now() + grace);
    });
    std::vector<std::thread> pool;
    for (unsigned i = 1; i < threads; ++i)
        pool.emplace_back([&io] { io.run(); });
    io.run();
    for (auto& t : pool)
        t.join();
    LANES_LOG(info, "main", "stopped");
    return 0;
}

} // namespace lanes::common::http
