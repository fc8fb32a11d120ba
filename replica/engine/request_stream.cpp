#include "replica/engine/request_stream.hpp"

#include <boost/asio.hpp>
#include <boost/asio/as_tuple.hpp>

namespace lanes::replica {

namespace asio = boost::asio;

request_stream::request_stream(asio::any_io_executor session_executor)
    : executor_(std::move(session_executor))
    , ready_(executor_) {}

void request_stream::push(stream_event ev) {
    std::lock_guard lock(mutex_);
    events_.push_back(std::move(ev));
    // The timer is only touched on the session's executor; the session checks the queue and
    // starts waiting without yielding in between, so this wake-up cannot be lost. Posted under
    // the lock: once the session has taken the last event it may let its executor go, and a post
    // made after that would reach nothing that still exists.
    asio::post(executor_, [self = shared_from_this()] { self->ready_.cancel(); });
}

asio::awaitable<stream_event> request_stream::next() {
    for (;;) {
        {
            std::lock_guard lock(mutex_);
            if (!events_.empty()) {
                stream_event ev = std::move(events_.front());
                events_.pop_front();
                co_return ev;
            }
        }
        ready_.expires_at(asio::steady_timer::time_point::max());
        co_await ready_.async_wait(asio::as_tuple(asio::use_awaitable));
    }
}

void request_stream::cancel() {
    if (cancelled_.exchange(true, std::memory_order_acq_rel))
        return;
    if (cancel_hook_)
        cancel_hook_();
}

} // namespace lanes::replica
