// What the router counts of each request once it is answered: lanes_router_requests_total and
// the per-key counters, the request's duration, the predicted hit of a routed attempt, the live
// page's latest decisions, and the access log line.
#pragma once

#include "common/http/message.hpp"
#include "common/http/response_writer.hpp"
#include "common/metrics/registry.hpp"
#include "router/access/client.hpp"
#include "router/policies/policy.hpp"
#include "router/proxy/dispatch_plan.hpp"
#include "router/proxy/upstream_call.hpp"
#include "router/ui/live_state.hpp"

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>

namespace lanes::router {

class replica_pool;
class router_metrics;

class accounting {
public:
    accounting(router_metrics& metrics, const replica_pool& pool, std::size_t live_decisions,
               bool access_log, double refusal_log_rate = 20);

    // A request counted against its key (when keys are configured): lanes_router_api_key_*.
    void count_for_key(const client& who, int status);
    // The routing metrics of a dispatched attempt (predicted hit and query tokens).
    void note_routed(const route_request& rr, const decision& d, std::size_t block_tokens);
    // The metrics, live-page entry and access log line of a request done on `replica_id`.
    void account(const common::http::request& req, const dispatch_plan& plan,
                 const std::string& replica_id, const decision& d, const attempt_result& last,
                 std::string_view request_id, std::int64_t attempts,
                 std::vector<weighed_candidate> weighed = {});
    // Every answer of the traffic listener (the server's answered hook): a refusal the router
    // made itself (status 400 and up, no access line yet) gets an access line with its status
    // and reason, at most refusal_log_rate a second. `req` is null for bytes that never became a
    // request.
    void answered(const common::http::request* req, const common::http::response_writer& out);
    // The live page's state (`admin`: as the admin listener serves it, with its buttons).
    std::string live_json(bool admin) const;

private:
    // requests_total's child for an answered request; the last one used on the thread is
    // remembered, as a steady stream of requests mostly repeats the same labels.
    common::metrics::counter& requests_counter(const std::string& replica_id, int status,
                                               route_reason reason, const std::string& model);

    router_metrics& metrics_;
    const replica_pool& pool_;
    live_state live_; // the live page's latest decisions
    bool access_log_;
    // The refusal lines' token bucket (whole lines), and the lines it held back since the last.
    struct refusal_bucket {
        std::mutex mutex;
        double rate = 20;
        double tokens = 20;
        std::chrono::steady_clock::time_point at{};
        std::uint64_t held = 0;
    } refusals_;
    const std::uint64_t instance_; // this object's number, from 1 (requests_counter's key)
};

} // namespace lanes::router
