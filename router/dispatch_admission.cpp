// The proxy's side of admission control (router/access/admission.hpp): whether a replica is at its
// cap, how many requests the fleet can take now, which replica a waiting request would rather
// have, and the wait itself with its 499/503 answers.
#include "router/proxy.hpp"

#include "common/openai/error.hpp"
#include "router/access/request_cost.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>

#include <charconv>
#include <chrono>

namespace lanes::router {

namespace asio = boost::asio;
namespace http = common::http;
namespace openai = common::openai;
namespace bhttp = boost::beast::http;

using clock_type = std::chrono::steady_clock;

bool proxy::at_cap(std::size_t i) const {
    const pool_snapshot& snap = snapshot_.view();
    if (cfg_.replica_max_inflight > 0 &&
        snapshot_.replica_at(i)->inflight.load() >= cfg_.replica_max_inflight)
        return true;
    const auto& waiting = snap.replicas[i].waiting;
    return cfg_.replica_queue_threshold > 0 && waiting && *waiting >= cfg_.replica_queue_threshold;
}

tried_set proxy::full_replicas() const {
    tried_set full;
    if (cfg_.replica_max_inflight <= 0 && cfg_.replica_queue_threshold <= 0)
        return full;
    const pool_snapshot& snap = snapshot_.view();
    for (std::size_t i = 0; i < snap.replicas.size(); ++i)
        if (at_cap(i))
            full.push_back(snap.replicas[i].id);
    return full;
}

std::size_t proxy::free_slots(const std::string& model, const std::string& replica) {
    std::lock_guard lock(policy_mutex_);
    const auto now = clock_type::now();
    refresh_snapshot(now);
    const pool_snapshot& snap = snapshot_.view();
    const auto serving = snapshot_.serving(model, serves_);
    if (serving == snapshot_cache::model_serving::none)
        return SIZE_MAX; // unknown: dispatch answers it
    route_request rr;
    rr.serves = serving == snapshot_cache::model_serving::some ? std::span<const char>(serves_)
                                                               : std::span<const char>();
    const auto free_on = [&](std::size_t i) -> std::size_t {
        if (at_cap(i))
            return 0;
        if (cfg_.replica_max_inflight <= 0)
            return SIZE_MAX;
        return static_cast<std::size_t>(cfg_.replica_max_inflight -
                                        snapshot_.replica_at(i)->inflight.load());
    };
    std::size_t free = 0;
    bool any = false;
    for (std::size_t i = 0; i < snap.replicas.size(); ++i) {
        if (!eligible(snap, i, rr, {})) // (routable: healthy, not draining, not backing off)
            continue;
        if (!replica.empty() && snap.replicas[i].id == replica)
            return free_on(i);
        any = true;
        const std::size_t f = free_on(i);
        free = f == SIZE_MAX || free == SIZE_MAX ? SIZE_MAX : free + f;
    }
    return any ? free : SIZE_MAX; // nothing routable at all: no wait helps, dispatch answers
}

std::string proxy::preferred_replica(const dispatch_plan& plan, bool with_room) {
    std::lock_guard lock(policy_mutex_);
    refresh_snapshot(clock_type::now());
    const pool_snapshot& snap = snapshot_.view();
    const tried_set full = with_room ? full_replicas() : tried_set(); // with_room: at cap left out
    if (snapshot_.serving(plan.model, serves_) == snapshot_cache::model_serving::none)
        return {};
    route_request rr = plan.rr;
    rr.serves = snapshot_.serving(plan.model, serves_) == snapshot_cache::model_serving::some
                    ? std::span<const char>(serves_)
                    : std::span<const char>();
    policy& chooser = plan.by_policy ? *policy_ : *forward_policy_;
    const decision d = chooser.pick(rr, snap, {}, full); // a peek: the policy is unchanged
    // Worth waiting for only where something is cached for the request: a matched prefix, its
    // session, or its response's state. A pick by load alone takes any replica with room.
    const bool affinity = d.matched_blocks > 0 || d.reason == route_reason::session_sticky ||
                          d.reason == route_reason::response_affinity;
    return d.replica && affinity ? snap.replicas[*d.replica].id : std::string();
}

asio::awaitable<bool> proxy::admit(http::request& req, http::response_writer& out,
                                   const dispatch_plan& plan, admission::ticket& ticket) {
    if (!admission_.enabled())
        co_return true;
    admission::request_info info{plan.model, plan.who.identity, 0, {}};
    if (plan.by_policy && cfg_.admission.affinity_wait.count() > 0 &&
        (cfg_.replica_max_inflight > 0 || cfg_.replica_queue_threshold > 0)) {
        info.preferred = preferred_replica(plan, false);
        // While it waits: another replica that caches its prefix as well and has room (where an
        // earlier request of the same prefix went) takes it at once.
        if (!info.preferred.empty())
            info.repick = [this, &plan] { return preferred_replica(plan, true); };
    }
    if (const auto h = req.find("x-lanes-priority")) {
        std::int64_t p = 0;
        const auto [end, ec] = std::from_chars(h->data(), h->data() + h->size(), p);
        if (ec == std::errc{} && end == h->data() + h->size())
            info.priority = p;
    } else if (const auto p = requested_priority(req.body())) {
        info.priority = *p;
    }
    std::shared_ptr<admission::waiter> waiting;
    out.on_client_closed([&waiting] { admission::client_left(waiting); });
    const admission_outcome outcome = co_await admission_.enter(info, ticket, waiting);
    if (outcome == admission_outcome::admitted) {
        metrics_.queue_wait.observe(admission::waited_seconds(waiting));
        co_return true;
    }
    if (outcome == admission_outcome::client_gone) {
        metrics_.queue_rejections.with({"client_gone"}).inc();
        metrics_.requests.with({"none", "499", "queued", plan.model_label}).inc();
        count_for_key(plan.who, 499);
        co_return false;
    }
    const bool full = outcome == admission_outcome::queue_full;
    metrics_.queue_rejections.with({full ? "full" : "timeout"}).inc();
    metrics_.requests.with({"none", "503", "queued", plan.model_label}).inc();
    count_for_key(plan.who, 503);
    auto res = openai::error_response(
        req, openai::api_error::of(503, full ? "the router's queue is full; retry later"
                                             : "no replica had room within --queue-timeout; "
                                               "retry later"));
    http::set_retry_after(res, cfg_.retry_after);
    co_await out.send(std::move(res));
    co_return false;
}

} // namespace lanes::router
