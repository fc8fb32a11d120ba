// Client-closed watches that start late. Arming a watch costs a system call (Asio tries the
// peeking receive at once, and it fails: the client has nothing more to send) and cancelling it
// costs an operation, together about a tenth of what a proxied request costs, while a request is
// usually answered long before its client could give up on it. So a session that wants its
// client watched joins one of these lists, and a timer arms the watches of those still waiting
// after one to two ticks. A request answered sooner never touches the socket for it.
//
// One list per io_context. It is locked only when several threads run that io_context (whose
// sessions then run on strands); a router's I/O threads each run an io_context of their own.
#pragma once

#include "common/http/message.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include <cstdint>
#include <memory>
#include <mutex>

namespace lanes::common::http {

class watch_delay : public std::enable_shared_from_this<watch_delay> {
public:
    // What waits in the list: a session whose watch is not armed yet. watch_now() is called on
    // the io_context's thread once the delay has passed; the waiter is already out of the list.
    class waiter {
    public:
        virtual ~waiter() = default;
        virtual void watch_now() = 0;

    private:
        friend class watch_delay;
        waiter* prev_ = nullptr;
        waiter* next_ = nullptr;
        std::uint64_t joined_ = 0; // the tick it joined in
        bool linked_ = false;
    };

    // `executor`: the io_context's (not a strand); `locking`: several threads run it.
    watch_delay(boost::asio::any_io_executor executor, duration tick, bool locking);
    watch_delay(const watch_delay&) = delete;
    watch_delay& operator=(const watch_delay&) = delete;

    void add(waiter& w);
    // Takes `w` out if it is still waiting; harmless otherwise.
    void remove(waiter& w);
    std::size_t waiting() const;

private:
    void start_timer();
    void on_tick();
    void unlink(waiter& w);

    boost::asio::steady_timer timer_;
    const duration tick_;
    const bool locking_;
    mutable std::mutex mutex_; // taken only when locking_
    waiter* first_ = nullptr;  // oldest
    waiter* last_ = nullptr;
    std::size_t size_ = 0;
    std::uint64_t ticks_ = 0;
    bool timer_pending_ = false;
};

} // namespace lanes::common::http
