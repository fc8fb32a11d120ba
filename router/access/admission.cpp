#include "router/access/admission.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <algorithm>
#include <atomic>

namespace lanes::router {

namespace asio = boost::asio;
using clock_type = std::chrono::steady_clock;

struct admission::waiter {
    explicit waiter(asio::any_io_executor e)
        : ex(e)
        , timer(e) {}
    asio::any_io_executor ex;
    asio::steady_timer timer; // touched on `ex` only
    std::string client;
    std::int64_t priority = 0;
    std::uint64_t sequence = 0;
    std::string preferred;
    clock_type::time_point queued_at{};
    bool granted = false;          // under the gate's lock
    std::string granted_on;        // the replica it was let in for, "" for any
    std::atomic<bool> gone{false}; // the client left

    // Ends the current wait, from any thread.
    static void wake(const std::shared_ptr<waiter>& w) {
        asio::post(w->ex, [w] { w->timer.cancel(); });
    }
};

admission::admission(admission_settings settings, room_fn room)
    : settings_(settings)
    , room_(std::move(room))
    , enabled_(settings.max_concurrent > 0 || settings.replica_caps) {}

admission::ticket::ticket(ticket&& o) noexcept
    : gate_(std::exchange(o.gate_, nullptr))
    , model_(std::move(o.model_))
    , reserved_(std::exchange(o.reserved_, false))
    , reserved_on_(std::move(o.reserved_on_)) {}

admission::ticket& admission::ticket::operator=(ticket&& o) noexcept {
    if (this != &o) {
        if (gate_)
            gate_->release(model_, reserved_, reserved_on_);
        gate_ = std::exchange(o.gate_, nullptr);
        model_ = std::move(o.model_);
        reserved_ = std::exchange(o.reserved_, false);
        reserved_on_ = std::move(o.reserved_on_);
    }
    return *this;
}

admission::ticket::~ticket() {
    if (gate_)
        gate_->release(model_, reserved_, reserved_on_);
}

void admission::ticket::routed() {
    if (gate_ && reserved_) {
        reserved_ = false;
        gate_->routed(model_, reserved_on_);
    }
}

std::size_t admission::queued(const model_state& m) {
    std::size_t n = 0;
    for (const auto& [client, q] : m.by_client)
        n += q.size();
    return n;
}

bool admission::has_room(const std::string& model, const model_state& m,
                         const std::string& replica) const {
    if (settings_.max_concurrent > 0 && m.active >= settings_.max_concurrent)
        return false;
    if (!settings_.replica_caps)
        return true;
    const std::size_t free = room_(model, {});
    if (free != SIZE_MAX && free <= m.reserved)
        return false;
    if (replica.empty())
        return true;
    const std::size_t here = room_(model, replica);
    const auto held = m.reserved_on.find(replica);
    return here == SIZE_MAX || here > (held == m.reserved_on.end() ? 0 : held->second);
}

void admission::grant(model_state& m, const std::shared_ptr<waiter>& w,
                      const std::string& replica) {
    w->granted = true;
    w->granted_on = replica;
    ++m.active;
    if (settings_.replica_caps) {
        ++m.reserved;
        if (!replica.empty())
            ++m.reserved_on[replica];
    }
}

void admission::unreserve(model_state& m, const std::string& replica) {
    --m.reserved;
    if (replica.empty())
        return;
    const auto it = m.reserved_on.find(replica);
    if (it != m.reserved_on.end() && --it->second == 0)
        m.reserved_on.erase(it);
}

void admission::remove(model_state& m, const std::shared_ptr<waiter>& w) {
    const auto it = m.by_client.find(w->client);
    if (it == m.by_client.end())
        return;
    auto& q = it->second;
    const auto at = std::find(q.begin(), q.end(), w);
    if (at == q.end())
        return;
    q.erase(at);
    --waiting_;
    if (q.empty())
        m.by_client.erase(it);
}

void admission::pump(const std::string& model, model_state& m) {
    const auto now = clock_type::now();
    // Rounds over the clients in turn, from the one after the client served last. Of each client's
    // first --queue-scan-depth waiters (in priority, then arrival order), the first that has room
    // goes: on the replica it prefers, or anywhere once it has held out for that long enough. So
    // a waiter held out for a busy replica does not hold back those behind it that prefer one
    // with room (no head-of-line blocking of affinity). A round that lets nobody in ends it.
    bool progress = true;
    while (progress && !m.by_client.empty() && has_room(model, m)) {
        progress = false;
        auto it = m.by_client.upper_bound(m.last_client);
        for (std::size_t seen = 0, n = m.by_client.size(); seen < n; ++seen) {
            if (it == m.by_client.end())
                it = m.by_client.begin();
            auto& q = it->second;
            auto pick = q.end();
            std::string target;
            const std::size_t depth =
                std::min(q.size(), std::max<std::size_t>(settings_.scan_depth, 1));
            for (auto at = q.begin(); at != q.begin() + static_cast<std::ptrdiff_t>(depth); ++at) {
                const auto& c = *at;
                const bool any =
                    c->preferred.empty() || now - c->queued_at >= settings_.affinity_wait;
                target = any ? std::string() : c->preferred;
                if (c->gone.load() || has_room(model, m, target)) {
                    pick = at;
                    break;
                }
            }
            if (pick == q.end()) {
                ++it;
                continue;
            }
            const std::shared_ptr<waiter> w = *pick;
            q.erase(pick);
            --waiting_;
            m.last_client = it->first;
            if (q.empty())
                m.by_client.erase(it);
            if (!w->gone.load()) { // a gone one finds itself out of the queue
                grant(m, w, target);
                waiter::wake(w);
            }
            progress = true;
            break;
        }
    }
}

void admission::release(const std::string& model, bool reserved, const std::string& replica) {
    std::lock_guard lock(mutex_);
    auto& m = models_[model];
    --m.active;
    if (reserved)
        unreserve(m, replica);
    pump(model, m);
    if (m.active == 0 && m.by_client.empty())
        models_.erase(model);
}

void admission::routed(const std::string& model, const std::string& replica) {
    std::lock_guard lock(mutex_);
    auto& m = models_[model];
    unreserve(m, replica);
    pump(model, m); // the reservation held room that the replica's count now shows
}

std::size_t admission::waiting() const {
    std::lock_guard lock(mutex_);
    return waiting_;
}

void admission::client_left(const std::shared_ptr<waiter>& w) {
    if (!w)
        return;
    w->gone.store(true);
    waiter::wake(w);
}

double admission::waited_seconds(const std::shared_ptr<waiter>& self) {
    return self ? std::chrono::duration<double>(clock_type::now() - self->queued_at).count() : 0.0;
}

asio::awaitable<admission_outcome> admission::enter(request_info info, ticket& out,
                                                    std::shared_ptr<waiter>& self) {
    if (!enabled_)
        co_return admission_outcome::admitted;
    clock_type::time_point deadline; // from when it is queued (one let in at once reads no clock)
    const auto executor = co_await asio::this_coro::executor;
    std::shared_ptr<waiter> w;
    {
        std::lock_guard lock(mutex_);
        auto& m = models_[info.model];
        // Straight in only when nobody of the model waits (a newcomer does not jump the queue)
        // and its preferred replica has room.
        if (m.by_client.empty() && has_room(info.model, m, info.preferred)) {
            ++m.active;
            out.gate_ = this;
            out.model_ = info.model;
            if (settings_.replica_caps) {
                ++m.reserved;
                out.reserved_ = true;
                out.reserved_on_ = info.preferred;
                if (!info.preferred.empty())
                    ++m.reserved_on[info.preferred];
            }
            co_return admission_outcome::admitted;
        }
        const auto own = m.by_client.find(info.client);
        if (waiting_ >= settings_.queue_size ||
            (settings_.queue_per_client > 0 && own != m.by_client.end() &&
             own->second.size() >= settings_.queue_per_client)) {
            if (m.active == 0 && m.by_client.empty())
                models_.erase(info.model);
            co_return admission_outcome::queue_full;
        }
        w = std::make_shared<waiter>(executor);
        w->client = info.client;
        w->priority = info.priority;
        w->sequence = ++sequence_;
        w->preferred = info.preferred;
        w->queued_at = clock_type::now();
        deadline = w->queued_at + settings_.queue_timeout;
        auto& q = m.by_client[info.client];
        // Lower priority values first, then arrival order.
        const auto at = std::upper_bound(q.begin(), q.end(), w, [](const auto& a, const auto& b) {
            return a->priority < b->priority ||
                   (a->priority == b->priority && a->sequence < b->sequence);
        });
        q.insert(at, w);
        ++waiting_;
        self = w;
        pump(info.model, m);
    }
    for (bool first = true;; first = false) {
        std::string better;
        if (!first && info.repick)
            better = info.repick();
        {
            std::lock_guard lock(mutex_);
            auto& m = models_[info.model];
            if (!better.empty() && !w->granted)
                w->preferred = std::move(better);
            if (w->granted) {
                out.gate_ = this;
                out.model_ = info.model;
                out.reserved_ = settings_.replica_caps;
                out.reserved_on_ = w->granted_on;
                co_return admission_outcome::admitted;
            }
            const bool gone = w->gone.load();
            if (gone || clock_type::now() >= deadline) {
                remove(m, w);
                if (m.active == 0 && m.by_client.empty())
                    models_.erase(info.model);
                co_return gone ? admission_outcome::client_gone : admission_outcome::timed_out;
            }
            pump(info.model, m); // room that no release announced (a scrape, a new replica)
            if (w->granted)
                continue;
        }
        const auto left = deadline - clock_type::now();
        w->timer.expires_after(std::min<clock_type::duration>(settings_.recheck, left));
        co_await w->timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
}

} // namespace lanes::router
