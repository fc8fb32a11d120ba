#include "router/proxy/admission_gate.hpp"

#include "common/openai/error.hpp"
#include "router/access/request_cost.hpp"
#include "router/metrics.hpp"
#include "router/proxy/accounting.hpp"
#include "router/proxy/chooser.hpp"

#include <boost/asio.hpp>

#include <charconv>
#include <cstdint>
#include <memory>

namespace lanes::router {

namespace asio = boost::asio;
namespace http = common::http;
namespace openai = common::openai;

namespace {

admission_settings settings_of(const proxy_config& cfg) {
    admission_settings a = cfg.admission;
    a.replica_caps = cfg.replica_max_inflight > 0 || cfg.replica_queue_threshold > 0;
    return a;
}

// x-lanes-priority, else the body's "priority" (vLLM's field); 0 when neither says.
std::int64_t priority_of(const http::request& req) {
    if (const auto h = req.find("x-lanes-priority")) {
        std::int64_t p = 0;
        const auto [end, ec] = std::from_chars(h->data(), h->data() + h->size(), p);
        return ec == std::errc{} && end == h->data() + h->size() ? p : 0;
    }
    return requested_priority(req.body()).value_or(0);
}

} // namespace

admission_gate::admission_gate(const proxy_config& cfg, router_metrics& metrics, chooser& choose,
                               accounting& counts)
    : cfg_(cfg)
    , metrics_(metrics)
    , choose_(choose)
    , counts_(counts)
    , queue_(settings_of(cfg), [&choose](const std::string& model, const std::string& replica) {
        return choose.free_slots(model, replica);
    }) {}

bool admission_gate::waits_for_affinity(const dispatch_plan& plan) const {
    return plan.by_policy && cfg_.admission.affinity_wait.count() > 0 &&
           (cfg_.replica_max_inflight > 0 || cfg_.replica_queue_threshold > 0);
}

asio::awaitable<bool> admission_gate::admit(http::request& req, http::response_writer& out,
                                            const dispatch_plan& plan, admission::ticket& ticket) {
    if (!queue_.enabled())
        co_return true;
    admission::request_info info{plan.model, plan.who.identity, 0, {}};
    if (waits_for_affinity(plan)) {
        info.preferred = choose_.preferred_replica(plan, false);
        // While it waits: another replica that caches its prefix as well and has room (where an
        // earlier request of the same prefix went) takes it at once.
        if (!info.preferred.empty())
            info.repick = [this, &plan] { return choose_.preferred_replica(plan, true); };
    }
    info.priority = priority_of(req);
    std::shared_ptr<admission::waiter> waiting;
    out.on_client_closed([&waiting] { admission::client_left(waiting); });
    const admission_outcome outcome = co_await queue_.enter(info, ticket, waiting);
    if (outcome == admission_outcome::admitted) {
        metrics_.queue_wait.observe(admission::waited_seconds(waiting));
        co_return true;
    }
    if (outcome == admission_outcome::client_gone) {
        metrics_.queue_rejections.with({"client_gone"}).inc();
        metrics_.requests.with({"none", "499", "queued", plan.model_label}).inc();
        counts_.count_for_key(plan.who, 499);
        co_return false;
    }
    const bool full = outcome == admission_outcome::queue_full;
    out.note_refusal(full ? "queue_full" : "queue_timeout");
    metrics_.queue_rejections.with({full ? "full" : "timeout"}).inc();
    metrics_.requests.with({"none", "503", "queued", plan.model_label}).inc();
    counts_.count_for_key(plan.who, 503);
    auto res = openai::error_response(
        req, openai::api_error::of(503, full ? "the router's queue is full; retry later"
                                             : "no replica had room within --queue-timeout; "
                                               "retry later"));
    http::set_retry_after(res, cfg_.retry_after);
    co_await out.send(std::move(res));
    co_return false;
}

} // namespace lanes::router
