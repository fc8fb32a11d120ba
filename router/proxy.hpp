// The router's traffic front: the route table, and for a generation request the retry loop. A
// request's body is read once for what routing needs, its prompt's blocks hashed, the policy asked
// for a replica; one attempt there (upstream.hpp) relays the answer, and a failure before any
// byte reached the client is tried again on a replica not yet tried.
#pragma once

#include "common/http/message.hpp"
#include "common/http/response_writer.hpp"
#include "common/openai/error.hpp"
#include "common/prompt/block_hash.hpp"
#include "router/admin.hpp"
#include "router/config.hpp"
#include "router/fleet/replica_pool.hpp"
#include "router/fleet/snapshot.hpp"
#include "router/metrics.hpp"
#include "router/policies/policy.hpp"
#include "router/upstream.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace lanes::router {

class proxy {
public:
    proxy(const router_config& cfg, replica_pool& pool, router_metrics& metrics,
          std::unique_ptr<policy> pol);

    boost::asio::awaitable<void> handle(common::http::request& req,
                                        common::http::response_writer& out);

    // Lets go of the replicas the last decision saw, removed ones included. Call at shutdown
    // before the io_contexts go: a replica holds pooled connections bound to them.
    void release_snapshot();

private:
    class done_notice;

    boost::asio::awaitable<void> completions(common::http::request& req,
                                             common::http::response_writer& out);
    boost::asio::awaitable<void> chat_completions(common::http::request& req,
                                                  common::http::response_writer& out);
    boost::asio::awaitable<void> health(common::http::request& req,
                                        common::http::response_writer& out);
    boost::asio::awaitable<void> metrics_page(common::http::request& req,
                                              common::http::response_writer& out);
    boost::asio::awaitable<void> models(common::http::request& req,
                                        common::http::response_writer& out);

    // The retry loop of a generation request.
    boost::asio::awaitable<void> generate(common::http::request& req,
                                          common::http::response_writer& out, bool chat);
    // Reads the body (the fast path, else the full parser, which names any problem) and fills
    // the routing view of the request; `rr` views `blocks` and `model`, which the caller keeps.
    std::optional<common::openai::api_error> route_for(const common::http::request& req, bool chat,
                                                       std::vector<common::block_hash>& blocks,
                                                       std::string& model, route_request& rr) const;
    // Refreshes the snapshot, asks the policy and tells it of its choice; `chosen` is the picked
    // replica, whose in-flight count is raised already (release it with an inflight_guard).
    decision pick(const route_request& rr, const tried_set& tried,
                  std::shared_ptr<replica>& chosen);
    // The routing metrics of a dispatched attempt (predicted hit and query tokens).
    void note_routed(const route_request& rr, const decision& d);
    // requests_total's child for an answered request; the last one used on the thread is
    // remembered, as a steady stream of requests mostly repeats the same three labels.
    common::metrics::counter& requests_counter(const std::string& replica_id, int status,
                                               route_reason reason);
    common::http::response failure_response(const common::http::request& req,
                                            const attempt_result& last, bool tried_any);

    const router_config& cfg_;
    replica_pool& pool_;
    router_metrics& metrics_;
    admin admin_;
    std::mutex policy_mutex_; // guards policy_ and snapshot_: policies are single-threaded
    std::unique_ptr<policy> policy_;
    snapshot_cache snapshot_;
    const std::uint64_t instance_; // this proxy's number, from 1 (requests_counter's key)
};

} // namespace lanes::router
