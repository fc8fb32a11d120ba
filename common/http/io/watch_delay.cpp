#include "common/http/io/watch_delay.hpp"

#include <optional>

namespace lanes::common::http {

watch_delay::watch_delay(boost::asio::any_io_executor executor, duration tick, bool locking)
    : timer_(std::move(executor))
    , tick_(tick)
    , locking_(locking) {}

void watch_delay::add(waiter& w) {
    std::optional<std::lock_guard<std::mutex>> lock;
    if (locking_)
        lock.emplace(mutex_);
    if (w.linked_)
        return;
    w.linked_ = true;
    w.joined_ = ticks_;
    w.next_ = nullptr;
    w.prev_ = last_;
    (last_ ? last_->next_ : first_) = &w;
    last_ = &w;
    ++size_;
    if (!timer_pending_)
        start_timer();
}

void watch_delay::remove(waiter& w) {
    std::optional<std::lock_guard<std::mutex>> lock;
    if (locking_)
        lock.emplace(mutex_);
    if (w.linked_)
        unlink(w);
}

std::size_t watch_delay::waiting() const {
    std::optional<std::lock_guard<std::mutex>> lock;
    if (locking_)
        lock.emplace(mutex_);
    return size_;
}

void watch_delay::unlink(waiter& w) {
    (w.prev_ ? w.prev_->next_ : first_) = w.next_;
    (w.next_ ? w.next_->prev_ : last_) = w.prev_;
    w.prev_ = w.next_ = nullptr;
    w.linked_ = false;
    --size_;
}

void watch_delay::start_timer() {
    timer_pending_ = true;
    timer_.expires_after(tick_);
    timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
        if (!ec)
            self->on_tick();
    });
}

void watch_delay::on_tick() {
    std::optional<std::lock_guard<std::mutex>> lock;
    if (locking_)
        lock.emplace(mutex_);
    timer_pending_ = false;
    ++ticks_;
    // Oldest first: those that joined before the previous tick have waited a whole tick at least.
    // watch_now() runs under the lock, so a waiter cannot leave (and go away) meanwhile.
    while (first_ && first_->joined_ + 2 <= ticks_) {
        waiter& w = *first_;
        unlink(w);
        w.watch_now();
    }
    if (first_)
        start_timer();
}

} // namespace lanes::common::http
