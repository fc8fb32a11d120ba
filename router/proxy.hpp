// The router's traffic front: the route table, and the dispatch loop every proxied request goes
// through. Generation requests (completions, chat, responses) are read once for what routing
// needs, their prompt's blocks hashed, and routed by the policy among the replicas serving their
// model; the rest of the OpenAI and vLLM API (embeddings, rerank, score, tokenize, audio, ...) goes
// to the least-loaded replica serving the model, its body untouched. One attempt on a replica
// (upstream.hpp) relays the answer; a failure or a 429/503 before any byte reached the client is
// tried again on a replica not yet tried.
#pragma once

#include "common/http/message.hpp"
#include "common/http/response_writer.hpp"
#include "common/openai/error.hpp"
#include "common/prompt/block_hash.hpp"
#include "router/access/admission.hpp"
#include "router/access/client.hpp"
#include "router/access/client_address.hpp"
#include "router/access/rate_limit.hpp"
#include "router/admin.hpp"
#include "router/config.hpp"
#include "router/fleet/replica_pool.hpp"
#include "router/fleet/snapshot.hpp"
#include "router/metrics.hpp"
#include "router/policies/ideal_cache.hpp"
#include "router/policies/policy.hpp"
#include "router/request/remote_tokenizer.hpp"
#include "router/request/request_view.hpp"
#include "router/response_affinity.hpp"
#include "router/status_pages.hpp"
#include "router/ui/live_state.hpp"
#include "router/upstream.hpp"

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace lanes::router {

class proxy {
public:
    // `refresh_models` reads every replica's model list again (the monitor's refresh_models).
    using models_refresher = std::function<boost::asio::awaitable<void>()>;

    proxy(const router_config& cfg, replica_pool& pool, router_metrics& metrics,
          std::unique_ptr<policy> pol, models_refresher refresh_models = {});

    // The traffic listener's requests.
    boost::asio::awaitable<void> handle(common::http::request& req,
                                        common::http::response_writer& out);
    // The admin listener's: the admin API, and /health, /readiness and /metrics again.
    boost::asio::awaitable<void> handle_admin(common::http::request& req,
                                              common::http::response_writer& out);

    // Reads the API keys (at start and on SIGHUP); false with `errors` set when they could not
    // be read, and then the keys in force stay. Without keys configured the router is open.
    bool load_keys(std::vector<std::string>& errors) { return keys_.load(errors); }
    bool keys_configured() const { return keys_.configured(); }

    // From SIGTERM on, /readiness answers 503 (the router keeps serving until it stops).
    void set_shutting_down() { status_.set_shutting_down(); }
    // /readiness also waits for `warm` (the KV-event index's first look at the replicas).
    void set_warm_check(std::function<bool()> warm) { status_.set_warm_check(std::move(warm)); }
    // Lets go of the replicas the last decision saw, removed ones included. Call at shutdown
    // before the io_contexts go: a replica holds pooled connections bound to them.
    void release_snapshot();

private:
    struct route {
        std::string_view path;
        unsigned methods;
        boost::asio::awaitable<void> (proxy::*serve)(common::http::request&,
                                                     common::http::response_writer&);
    };
    // A route that needs a key when keys are configured; its handler learns whose it was.
    struct client_route {
        std::string_view path;
        unsigned methods;
        boost::asio::awaitable<void> (proxy::*serve)(common::http::request&,
                                                     common::http::response_writer&, client);
    };
    boost::asio::awaitable<void> unrouted(const common::http::request& req,
                                          common::http::response_writer& out, unsigned path_methods,
                                          std::string_view not_found);
    class done_notice;
    // What one proxied request is, for the dispatch loop.
    struct dispatch_plan {
        route_request rr;
        std::string model;       // as resolved (rr.model views it, from dispatch on)
        std::string model_label; // the model in metrics and the live page (model_label())
        std::vector<common::block_hash> blocks;
        bool by_policy = true;             // the routing policy, else least-loaded
        std::optional<std::string> pinned; // the replica that must answer (a response's producer)
        bool capture_response_id = false;
        std::size_t block_tokens = common::default_block_size;
        std::chrono::steady_clock::time_point start = std::chrono::steady_clock::now();
        client who;
        bool ideal_counted = false; // its blocks went through ideal_ (once, not per attempt)
    };
    struct pick_result;

    boost::asio::awaitable<void> completions(common::http::request& req,
                                             common::http::response_writer& out, client who);
    boost::asio::awaitable<void> chat_completions(common::http::request& req,
                                                  common::http::response_writer& out, client who);
    boost::asio::awaitable<void> responses(common::http::request& req,
                                           common::http::response_writer& out, client who);
    boost::asio::awaitable<void> response_by_id(common::http::request& req,
                                                common::http::response_writer& out, client who);
    boost::asio::awaitable<void> forwarded(common::http::request& req,
                                           common::http::response_writer& out, client who);
    boost::asio::awaitable<void> health(common::http::request& req,
                                        common::http::response_writer& out);
    boost::asio::awaitable<void> readiness(common::http::request& req,
                                           common::http::response_writer& out);
    boost::asio::awaitable<void> metrics_page(common::http::request& req,
                                              common::http::response_writer& out);
    boost::asio::awaitable<void> models(common::http::request& req,
                                        common::http::response_writer& out, client who);
    // The live page (/ui) and its state (/ui/state): on the admin listener always, on the
    // traffic port with --ui-public.
    boost::asio::awaitable<void> ui_page(common::http::request& req,
                                         common::http::response_writer& out);
    boost::asio::awaitable<void> ui_state(common::http::request& req,
                                          common::http::response_writer& out);
    boost::asio::awaitable<void> ui_state_admin(common::http::request& req,
                                                common::http::response_writer& out);
    std::string ui_state_json(bool admin);

    // A generation request: read, hashed, routed by the policy. With --tokenize-endpoint a
    // completions or chat request is first given the engine's token ids (generate_tokenized);
    // `engine_ids`, when set, are what it is hashed by.
    boost::asio::awaitable<void> generate(common::http::request& req,
                                          common::http::response_writer& out, body_kind kind,
                                          client who);
    boost::asio::awaitable<void> generate_tokenized(common::http::request& req,
                                                    common::http::response_writer& out,
                                                    body_kind kind, client who);
    boost::asio::awaitable<void> generate_hashed(common::http::request& req,
                                                 common::http::response_writer& out, body_kind kind,
                                                 client who,
                                                 const std::vector<std::uint32_t>* engine_ids);
    // How many more requests the routable replicas serving `model` can take before each is at
    // its cap (admission's room); SIZE_MAX when no cap applies or none is routable.
    std::size_t free_slots(const std::string& model, const std::string& replica);
    // The replica the policy picks for `plan` when that pick has affinity (a matched prefix, a
    // session, a response's state), else ""; with_room: among the replicas below their cap. A
    // peek: the policy is left as it was.
    std::string preferred_replica(const dispatch_plan& plan, bool with_room);
    // Whether snapshot replica `i` is at its cap (--replica-max-inflight,
    // --replica-queue-threshold). Under policy_mutex_.
    bool at_cap(std::size_t i) const;
    // The snapshot replicas at their cap, by id (none when no cap is set). Under policy_mutex_.
    tried_set full_replicas() const;
    // Waits in the admission queue when the model or its replicas are full; false when the
    // request was answered (refused) or its client left there.
    boost::asio::awaitable<bool> admit(common::http::request& req,
                                       common::http::response_writer& out,
                                       const dispatch_plan& plan, admission::ticket& ticket);
    // A request counted against its key (when keys are configured): lanes_router_api_key_*.
    void count_for_key(const client& who, int status);
    // The 429 of a request over a limit (`kind`: "requests" or "tokens").
    common::http::response rate_limited(const common::http::request& req, const client& who,
                                        std::string_view kind, const limit_verdict& v);
    // Takes a request's tokens (`prompt_tokens` plus the output it asks for) from its client's
    // token bucket; the 429 when the bucket is short, else nullopt.
    std::optional<common::http::response> over_token_limit(const common::http::request& req,
                                                           const client& who,
                                                           std::size_t prompt_tokens);
    // The retry loop every proxied request goes through; it keeps the plan (its route_request's
    // model and blocks are pointed at the plan's own fields when it starts).
    boost::asio::awaitable<void> dispatch(common::http::request& req,
                                          common::http::response_writer& out, dispatch_plan plan);
    // Refreshes the snapshot, works out which replicas serve the model, asks the policy (or takes
    // the pinned replica) and tells it of its choice. The chosen replica's in-flight count is
    // raised already (release it with an inflight_guard). `now` is the decision's time, as the
    // caller read it to time the decision.
    pick_result pick(dispatch_plan& plan, const tried_set& tried,
                     std::chrono::steady_clock::time_point now);
    // Brings the snapshot up to date and tells the policies when its membership changed. Under
    // policy_mutex_.
    void refresh_snapshot(std::chrono::steady_clock::time_point now);
    // The model a request is for: as named, else --default-model, else the fleet's only one.
    std::string resolve_model(const std::optional<std::string>& named) const;
    // What a metric's `model` label says of a resolved model: the model when a replica's
    // /v1/models lists it or it is --default-model, else "unlisted" (a replica whose list is
    // unread serves any name a client makes up, and labels must not grow with them).
    std::string model_label(const std::string& model) const;
    // The routing metrics of a dispatched attempt (predicted hit and query tokens).
    void note_routed(const route_request& rr, const decision& d, std::size_t block_tokens);
    // requests_total's child for an answered request; the last one used on the thread is
    // remembered, as a steady stream of requests mostly repeats the same labels.
    common::metrics::counter& requests_counter(const std::string& replica_id, int status,
                                               route_reason reason, const std::string& model);
    common::http::response failure_response(const common::http::request& req,
                                            const attempt_result& last, bool tried_any,
                                            std::chrono::milliseconds backoff_left);
    // dispatch's two answers of its own, each a coroutine apart: GCC keeps every local of a
    // coroutine in its heap frame for the coroutine's whole life, and dispatch's frame lives as
    // long as the request does (a stream's, minutes). The 404 of a model no replica serves:
    boost::asio::awaitable<void> reject_unknown_model(common::http::request& req,
                                                      common::http::response_writer& out,
                                                      const dispatch_plan& plan);
    // ... and the answer when no replica took the request: the last upstream error, or ours.
    boost::asio::awaitable<void>
    answer_unrouted(common::http::request& req, common::http::response_writer& out,
                    const dispatch_plan& plan, const attempt_result& last, bool tried_any,
                    std::chrono::milliseconds backoff_left, std::chrono::seconds retry_after,
                    const std::string& request_id);
    // A 429 or 503: the replica takes no request for its Retry-After, else the default backoff,
    // capped; returns that wait in whole seconds.
    std::chrono::seconds hold_off(replica& r, const attempt_result& last);
    // The metrics and access log line of a request done on the chosen replica.
    void account(const common::http::request& req, const dispatch_plan& plan, const pick_result& p,
                 const attempt_result& last, std::string_view request_id, std::int64_t attempts);

    const router_config& cfg_;
    replica_pool& pool_;
    router_metrics& metrics_;
    admin admin_;
    key_store keys_;
    rate_limiter limiter_;
    trusted_proxies proxies_;
    admission admission_;
    models_refresher refresh_models_;
    std::mutex policy_mutex_; // guards the policies, snapshot_ and serves_
    std::unique_ptr<policy> policy_;
    std::unique_ptr<policy> forward_policy_; // least-loaded, for the endpoints not routed on
    snapshot_cache snapshot_;
    std::vector<char> serves_; // pick's: which snapshot replicas serve the request's model
    response_affinity responses_;
    status_pages status_;
    std::unique_ptr<remote_tokenizer> tokenizer_; // with --tokenize-endpoint
    live_state live_;                             // the live page's latest decisions
    ideal_cache ideal_;                           // under policy_mutex_
    const std::uint64_t instance_; // this proxy's number, from 1 (requests_counter's key)
};

} // namespace lanes::router
