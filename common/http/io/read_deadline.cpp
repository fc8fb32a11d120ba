#include "common/http/io/read_deadline.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/error.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>

namespace lanes::common::http {

namespace asio = boost::asio;
using boost::system::error_code;
using clock_type = std::chrono::steady_clock;

struct read_deadline::state {
    explicit state(asio::any_io_executor ex)
        : timer(std::move(ex)) {}
    asio::steady_timer timer;
    clock_type::time_point deadline{};  // of the read in progress
    clock_type::time_point armed_for{}; // what the pending wait ends at
    // Cancelled on expiry; null except while a read is in progress. Atomic: a socket that moved
    // to another thread may clear it while an old wait's handler looks at it.
    std::atomic<asio::ip::tcp::socket*> socket{nullptr};
    // The socket of the last read, whose executor is the timer's: a read on it again needs no
    // comparison of executors (a socket moved to another executor comes with abandon()).
    const asio::ip::tcp::socket* last_socket = nullptr;
    std::uint64_t generation = 0; // of the pending wait; an older one's handler does nothing
    bool pending = false;
    bool fired = false; // the read in progress was cancelled by the deadline

    static void arm(const std::shared_ptr<state>& s) {
        s->pending = true;
        s->armed_for = s->deadline;
        const std::uint64_t generation = ++s->generation;
        s->timer.expires_at(s->deadline);
        s->timer.async_wait([s, generation](error_code ec) {
            if (generation != s->generation)
                return; // replaced by an earlier deadline
            s->pending = false;
            asio::ip::tcp::socket* socket = s->socket.load(std::memory_order_relaxed);
            if (ec || !socket)
                return; // cancelled, or no read in progress
            if (clock_type::now() < s->deadline) {
                arm(s); // the deadline moved on since this wait began
                return;
            }
            s->fired = true;
            error_code ignored;
            socket->cancel(ignored);
        });
    }
};

void read_deadline::start(asio::ip::tcp::socket& socket, duration timeout) {
    if (state_ && state_->last_socket != &socket &&
        state_->timer.get_executor() != socket.get_executor())
        abandon();
    if (!state_)
        state_ = std::make_shared<state>(socket.get_executor());
    state_->last_socket = &socket;
    state_->socket.store(&socket, std::memory_order_relaxed);
    state_->fired = false;
    state_->deadline = clock_type::now() + timeout;
    if (!state_->pending || state_->deadline < state_->armed_for)
        state::arm(state_);
}

void read_deadline::stop() {
    if (state_)
        state_->socket.store(nullptr, std::memory_order_relaxed);
}

error_code read_deadline::result(error_code ec) const {
    if (ec == asio::error::operation_aborted && state_ && state_->fired)
        return boost::beast::error::timeout;
    return ec;
}

bool read_deadline::fired() const {
    return state_ && state_->fired;
}

void read_deadline::abandon() {
    if (!state_)
        return;
    // A wait still pending would hold its state until the deadline (minutes for a first byte),
    // one per move: at thousands of requests a second, megabytes. The cancel runs on the timer's
    // own thread, which is the only one that may touch it.
    state_->socket.store(nullptr, std::memory_order_relaxed);
    const auto ex = state_->timer.get_executor();
    asio::post(ex, [s = std::move(state_)] { s->timer.cancel(); });
}

void read_deadline::release() {
    if (!state_)
        return;
    state_->socket.store(nullptr, std::memory_order_relaxed);
    state_->timer.cancel();
    state_.reset();
}

} // namespace lanes::common::http
