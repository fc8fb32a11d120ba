// The router's request path: parse the body once, hash the prompt's blocks, ask the policy for a
// replica, forward over a pooled keep-alive connection and relay the answer (SSE chunk by chunk),
// retrying on another replica while nothing has reached the client.
#pragma once

#include "common/http/server.hpp"
#include "common/openai/request.hpp"
#include "router/admin.hpp"
#include "router/config.hpp"
#include "router/fleet/replica_monitor.hpp"
#include "router/fleet/replica_pool.hpp"
#include "router/metrics.hpp"
#include "router/policies/policy.hpp"

#include <boost/asio/awaitable.hpp>

#include <memory>
#include <mutex>
#include <optional>

namespace lanes::router {

class proxy {
public:
    proxy(const router_config& cfg, replica_pool& pool, router_metrics& metrics,
          replica_monitor& monitor, std::unique_ptr<policy> pol);

    boost::asio::awaitable<void> handle(common::http::request& req,
                                        common::http::response_writer& out);

    // Lets go of the replicas the last decision saw, removed ones included. Call at shutdown
    // before the io_contexts go: a replica holds pooled connections bound to them.
    void release_snapshot();

private:
    struct routed;
    struct attempt_result;
    struct upstream_link;
    class done_notice;

    std::optional<common::openai::api_error> route_for(const common::http::request& req, bool chat,
                                                       std::vector<common::block_hash>& blocks,
                                                       std::string& model, route_request& rr) const;
    // requests_total's child for an answered request; the last one used on the thread is
    // remembered, as a steady stream of requests mostly repeats the same three labels.
    common::metrics::counter& requests_counter(const std::string& replica_id, int status,
                                               route_reason reason);
    // The routing metrics of a dispatched attempt (predicted hit and query tokens).
    void note_routed(const route_request& rr, const routed& r);
    boost::asio::awaitable<void> generate(common::http::request& req,
                                          common::http::response_writer& out, bool chat);
    boost::asio::awaitable<void> models(common::http::request& req,
                                        common::http::response_writer& out);
    // One attempt on one replica. Sets `sent_any` once bytes reached the client.
    boost::asio::awaitable<attempt_result> forward(common::http::request& req,
                                                   common::http::response_writer& out, routed& r);
    boost::asio::awaitable<void> relay_stream(common::http::response_writer& out, routed& r,
                                              upstream_link& link, const std::string& content_type,
                                              attempt_result& result);
    void recycle(routed& r, upstream_link& link);
    common::http::response failure_response(const common::http::request& req,
                                            const attempt_result& last, bool tried_any);
    common::http::header_list route_headers(const routed& r) const;
    // Refreshes the snapshot, asks the policy and tells it of its choice; `chosen` is the picked
    // replica, whose in-flight count is raised already (release it with an inflight_guard).
    decision pick(const route_request& rr, const tried_set& tried,
                  std::shared_ptr<replica>& chosen);

    const router_config& cfg_;
    replica_pool& pool_;
    router_metrics& metrics_;
    replica_monitor& monitor_;
    admin admin_;
    std::mutex policy_mutex_; // guards policy_ and everything below: policies are single-threaded
    std::unique_ptr<policy> policy_;
    const std::uint64_t instance_; // this proxy's number, from 1 (requests_counter's key)
    std::uint64_t seen_version_ = 0;
    pool_snapshot snap_; // the policy's view, refreshed in place on every decision
    std::vector<std::shared_ptr<replica>> snap_replicas_; // lines up with snap_.replicas
    std::uint64_t snap_version_ = UINT64_MAX;
    std::vector<std::pair<std::uint64_t, scraped_stats>> snap_stats_; // refresh()'s cache
};

} // namespace lanes::router
