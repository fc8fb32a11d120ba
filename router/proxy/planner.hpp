// A request's plan before it is dispatched: a generation request (completions, chat, responses)
// is read once for what routing needs, its prompt's blocks hashed (with the engine's token ids,
// computed in process with --tokenizer, or asked of --tokenize-endpoint) and routed by the policy;
// the rest of the API is read for its model only and goes to the least-loaded replica serving it; a
// response's continuation, or a read of a stored response, is pinned to the replica that made it.
// Refusals (a bad body, a token budget spent) are answered here.
#pragma once

#include "common/http/message.hpp"
#include "common/http/response_writer.hpp"
#include "router/access/client.hpp"
#include "router/proxy/dispatch_plan.hpp"
#include "router/proxy/proxy_config.hpp"
#include "router/request/local_tokenizer.hpp"
#include "router/request/remote_tokenizer.hpp"
#include "router/request/request_view.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lanes::router {

class accounting;
class client_limits;
class dispatcher;
class replica_pool;
class response_affinity;
class router_metrics;

class planner {
public:
    planner(const proxy_config& cfg, const replica_pool& pool, router_metrics& metrics,
            client_limits& limits, accounting& counts, response_affinity& responses,
            dispatcher& dispatch);

    // Not coroutines themselves: each reads what it needs, makes the plan and returns the
    // dispatch that carries it, or the refusal.
    boost::asio::awaitable<void> generate(common::http::request& req,
                                          common::http::response_writer& out, body_kind kind,
                                          client who);
    // POST to a path of the API not routed on (embeddings, rerank, tokenize, audio, ...).
    boost::asio::awaitable<void> forwarded(common::http::request& req,
                                           common::http::response_writer& out, client who);
    // GET /v1/responses/{id} and its POST .../cancel go where the response was made.
    boost::asio::awaitable<void> response_by_id(common::http::request& req,
                                                common::http::response_writer& out, client who);

private:
    // The engine's token ids for the request (from the LRU, else the tokenize endpoint; none
    // when that fails or the prompt is token ids already), then generate_hashed.
    boost::asio::awaitable<void> generate_tokenized(common::http::request& req,
                                                    common::http::response_writer& out,
                                                    body_kind kind, client who);
    // generate_hashed with ids computed in process (kept alive across its suspension).
    boost::asio::awaitable<void> generate_with_ids(common::http::request& req,
                                                   common::http::response_writer& out,
                                                   body_kind kind, client who,
                                                   std::vector<std::uint32_t> ids);
    // `engine_ids`, when set, are what the prompt is hashed by.
    boost::asio::awaitable<void> generate_hashed(common::http::request& req,
                                                 common::http::response_writer& out, body_kind kind,
                                                 client who,
                                                 const std::vector<std::uint32_t>* engine_ids);
    // The model a request is for: as named, else --default-model, else the fleet's only one.
    std::string resolve_model(const std::optional<std::string>& named) const;
    // What a metric's `model` label says of a resolved model: the model when a replica's
    // /v1/models lists it or it is --default-model, else "unlisted" (a replica whose list is
    // unread serves any name a client makes up, and labels must not grow with them).
    std::string model_label(const std::string& model) const;

    const proxy_config& cfg_;
    const replica_pool& pool_;
    router_metrics& metrics_;
    client_limits& limits_;
    accounting& counts_;
    response_affinity& responses_;
    dispatcher& dispatch_;
    std::unique_ptr<remote_tokenizer> tokenizer_; // with --tokenize-endpoint
    std::unique_ptr<local_tokenizers> local_;     // with --tokenizer
};

} // namespace lanes::router
