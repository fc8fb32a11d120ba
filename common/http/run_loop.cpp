#include "common/http/run_loop.hpp"

#include "common/log.hpp"

#include <boost/asio.hpp>

#include <csignal>
#include <thread>
#include <vector>

namespace lanes::common::http {

namespace asio = boost::asio;

namespace {

// Arms the SIGINT/SIGTERM handling on `io` and runs `run_all` (which returns once `io` has
// stopped); `stop_all` stops `io` and everything else that runs.
int run_with_signals(asio::io_context& io, duration grace, const std::function<void()>& on_signal,
                     const std::function<bool()>& is_drained, const std::function<void()>& stop_all,
                     const std::function<void()>& run_all, const shutdown_steps& steps) {
    asio::signal_set signals(io, SIGINT, SIGTERM);
    asio::signal_set hangups(io);
    std::function<void()> wait_hangup = [&] {
        hangups.async_wait([&](boost::system::error_code ec, int) {
            if (ec)
                return;
            LANES_LOG(info, "main", "SIGHUP: reloading");
            steps.on_hangup();
            wait_hangup();
        });
    };
    if (steps.on_hangup) {
        hangups.add(SIGHUP);
        wait_hangup();
    }
    asio::steady_timer drain_timer(io);
    asio::steady_timer delay_timer(io);
    const auto drain_poll = std::chrono::milliseconds(20);
    std::function<void(std::chrono::steady_clock::time_point)> poll_drain =
        [&](std::chrono::steady_clock::time_point deadline) {
            if (is_drained() || std::chrono::steady_clock::now() >= deadline) {
                stop_all();
                return;
            }
            drain_timer.expires_after(drain_poll);
            drain_timer.async_wait([&, deadline](boost::system::error_code ec) {
                if (!ec)
                    poll_drain(deadline);
            });
        };
    const auto drain = [&] {
        on_signal();
        poll_drain(std::chrono::steady_clock::now() + grace);
    };
    signals.async_wait([&](boost::system::error_code ec, int sig) {
        if (ec)
            return;
        LANES_LOG(info, "main",
                  "signal " << sig << ": draining in " << steps.delay.count() << " ms (up to "
                            << grace.count() << " ms); send it again to stop at once");
        signals.async_wait([&](boost::system::error_code ec2, int) {
            if (!ec2)
                stop_all();
        });
        boost::system::error_code ignored;
        hangups.cancel(ignored); // no reload while draining
        if (steps.on_notice)
            steps.on_notice();
        if (steps.delay.count() <= 0) {
            drain();
            return;
        }
        delay_timer.expires_after(steps.delay);
        delay_timer.async_wait([&](boost::system::error_code dec) {
            if (!dec)
                drain();
        });
    });
    run_all();
    LANES_LOG(info, "main", "stopped");
    return 0;
}

} // namespace

int run_until_signal(asio::io_context& io, unsigned threads, duration grace,
                     std::function<void()> on_signal, std::function<bool()> is_drained,
                     const shutdown_steps& steps) {
    return run_with_signals(
        io, grace, on_signal, is_drained, [&io] { io.stop(); },
        [&io, threads] {
            std::vector<std::thread> pool;
            for (unsigned i = 1; i < threads; ++i)
                pool.emplace_back([&io] { io.run(); });
            io.run();
            for (auto& t : pool)
                t.join();
        },
        steps);
}

int run_until_signal(asio::io_context& io, const std::vector<asio::io_context*>& workers,
                     duration grace, std::function<void()> on_signal,
                     std::function<bool()> is_drained, const shutdown_steps& steps) {
    using guard = asio::executor_work_guard<asio::io_context::executor_type>;
    std::vector<guard> keep_running;
    for (auto* w : workers)
        keep_running.push_back(asio::make_work_guard(*w));
    const auto stop_all = [&io, &workers] {
        io.stop();
        for (auto* w : workers)
            w->stop();
    };
    return run_with_signals(
        io, grace, on_signal, is_drained, stop_all,
        [&] {
            std::vector<std::thread> pool;
            for (auto* w : workers)
                pool.emplace_back([w] { w->run(); });
            io.run();
            stop_all(); // io ran out of work some other way: take the workers down with it
            for (auto& t : pool)
                t.join();
        },
        steps);
}

} // namespace lanes::common::http
