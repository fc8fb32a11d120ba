// Admission control: requests wait in the router, not in the engines' queues, while their model
// is at --max-concurrent-requests or every replica serving it is at its load cap; they are let in
// as room appears, so each is routed with fresh state (Dynamo's --router-queue-threshold, SGLang's
// concurrency limiter). Fair across clients: the waiting requests of each client (API key name or
// address) form a queue of their own, and room goes to the clients in turn, so one tenant's burst
// cannot starve another; within a client, lower priority values first (as vLLM), then arrival
// order, save that a waiter whose preferred replica is full lets one behind it go to a replica
// with room. The queue is bounded (full: refused at once) and so is each wait.
#pragma once

#include "common/http/message.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace lanes::router {

struct admission_settings {
    std::size_t max_concurrent = 0; // requests of one model let in at once; 0: no cap
    bool replica_caps = false;      // room() counts replicas below their load cap
    std::size_t queue_size = 1024;  // requests waiting, over all models
    // Requests one client (key or address) may have waiting for one model; 0: only queue_size
    // bounds them. Without it one client can fill the queue, and others' requests meet it full.
    std::size_t queue_per_client = 0;
    common::http::duration queue_timeout{30'000};
    // How often a waiting request looks again for room that no finished request announced (a
    // scrape that shows an engine's queue drained, a replica added).
    common::http::duration recheck{20};
    // How long a waiting request holds out for the replica its policy prefers (the one caching
    // its prefix) before it takes room on any replica; 0: any at once.
    common::http::duration affinity_wait{1'000};
    // How many of a client's first waiters are looked at for one that can go now (the head may
    // be holding out for its replica while those behind it prefer one with room).
    std::size_t scan_depth = 64;
};

enum class admission_outcome { admitted, queue_full, timed_out, client_gone };

class admission {
public:
    // `room(model, replica)`: how many more requests the replicas serving `model` can take now,
    // or with `replica` named that one (SIZE_MAX when nothing limits them, or no replica could
    // take it at all: dispatch then answers; a named one that is not routable counts as any).
    using room_fn = std::function<std::size_t(const std::string&, const std::string&)>;
    admission(admission_settings settings, room_fn room);

    // A request let in; releasing it (destroying it) gives its place to the next.
    class ticket {
    public:
        ticket() = default;
        ticket(ticket&& o) noexcept;
        ticket& operator=(ticket&& o) noexcept;
        ~ticket();
        ticket(const ticket&) = delete;
        ticket& operator=(const ticket&) = delete;
        // The request has been routed (its replica counts it in flight): the reservation that
        // let it in is no longer needed to keep others out.
        void routed();

    private:
        friend class admission;
        admission* gate_ = nullptr;
        std::string model_;
        bool reserved_ = false;
        std::string reserved_on_; // the replica it was let in for, "" for any
    };

    struct request_info {
        std::string model;
        std::string client;
        std::int64_t priority = 0;
        std::string preferred; // the replica the policy would pick, caps aside ("" for any)
        // Called (outside the gate's lock) on each recheck while waiting for `preferred`: a
        // replica with room that would serve it as well ("" for none), taken as the new one.
        std::function<std::string()> repick;
    };
    // Waits until the request may go (or is refused). `client_gone` is set by the caller's
    // client-closed watch; `wake` is what that watch calls to end the wait at once.
    struct waiter;
    boost::asio::awaitable<admission_outcome> enter(request_info info, ticket& out,
                                                    std::shared_ptr<waiter>& self);
    // Ends the wait of `w` because its client left (from the client-closed watch, any thread).
    static void client_left(const std::shared_ptr<waiter>& w);
    // Seconds a request waited in the queue: 0 when enter() let it in at once (`self` unset),
    // which reads no clock.
    static double waited_seconds(const std::shared_ptr<waiter>& self);

    bool enabled() const { return enabled_; }
    std::size_t waiting() const;

private:
    struct model_state {
        std::size_t active = 0;                         // let in and not yet released
        std::size_t reserved = 0;                       // let in and not yet routed
        std::map<std::string, std::size_t> reserved_on; // of those, let in for one replica
        std::map<std::string, std::deque<std::shared_ptr<waiter>>> by_client;
        std::string last_client; // the client served last, for the turn order
    };
    // Lets in, in turn, as many waiters of `model` as there is room for; under the lock.
    void pump(const std::string& model, model_state& m);
    bool has_room(const std::string& model, const model_state& m,
                  const std::string& replica = {}) const;
    void grant(model_state& m, const std::shared_ptr<waiter>& w, const std::string& replica);
    void unreserve(model_state& m, const std::string& replica);
    static std::size_t queued(const model_state& m);
    void release(const std::string& model, bool reserved, const std::string& replica);
    void routed(const std::string& model, const std::string& replica);
    void remove(model_state& m, const std::shared_ptr<waiter>& w);

    admission_settings settings_;
    room_fn room_;
    bool enabled_;
    mutable std::mutex mutex_;
    std::map<std::string, model_state> models_;
    std::size_t waiting_ = 0;
    std::uint64_t sequence_ = 0;
};

} // namespace lanes::router
