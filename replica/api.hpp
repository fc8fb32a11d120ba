// The replica's HTTP surface: OpenAI completions and chat completions (stream and non-stream),
// /v1/models, /tokenize and /detokenize (vLLM's), /health, /metrics, /load and, behind its token,
// /kv-events/blocks (the KV cache's blocks in the event form, for a router warming up). Handlers
// validate, hand the request to the engine and relay its events; every refusal is OpenAI error
// JSON.
#pragma once

#include "common/access/secret.hpp"
#include "common/http/message.hpp"
#include "common/http/response_writer.hpp"
#include "common/openai/error.hpp"
#include "common/openai/request.hpp"
#include "common/openai/response.hpp"
#include "replica/config.hpp"
#include "replica/engine/engine.hpp"
#include "replica/engine/generation_defaults.hpp"
#include "replica/metrics.hpp"

#include <boost/asio/awaitable.hpp>

#include <atomic>
#include <cstdint>
#include <optional>

namespace lanes::replica {

class api {
public:
    api(const replica_config& cfg, engine& eng, replica_metrics& metrics);

    boost::asio::awaitable<void> handle(common::http::request& req,
                                        common::http::response_writer& out);

private:
    boost::asio::awaitable<void> completions(common::http::request& req,
                                             common::http::response_writer& out);
    boost::asio::awaitable<void> chat_completions(common::http::request& req,
                                                  common::http::response_writer& out);
    boost::asio::awaitable<void> health(common::http::request& req,
                                        common::http::response_writer& out);
    boost::asio::awaitable<void> metrics_page(common::http::request& req,
                                              common::http::response_writer& out);
    boost::asio::awaitable<void> load(common::http::request& req,
                                      common::http::response_writer& out);
    boost::asio::awaitable<void> models(common::http::request& req,
                                        common::http::response_writer& out);
    boost::asio::awaitable<void> kv_blocks(common::http::request& req,
                                           common::http::response_writer& out);
    boost::asio::awaitable<void> tokenize(common::http::request& req,
                                          common::http::response_writer& out);
    common::http::response tokenize_answer(const common::http::request& req) const;
    boost::asio::awaitable<void> detokenize(common::http::request& req,
                                            common::http::response_writer& out);
    common::http::response detokenize_answer(const common::http::request& req) const;
    boost::asio::awaitable<void> generate(common::http::request& req,
                                          common::http::response_writer& out, bool chat);
    // The engine's request for `g`, or the 4xx the replica answers instead.
    std::optional<common::openai::api_error>
    make_engine_request(const common::openai::generation_request& g, std::string_view body,
                        bool chat, engine_request& er);
    boost::asio::awaitable<void> answer_whole(common::http::request& req,
                                              common::http::response_writer& out,
                                              request_stream& stream,
                                              const common::openai::generation_request& g,
                                              const common::openai::response_meta& meta);
    boost::asio::awaitable<void> answer_stream(common::http::response_writer& out,
                                               request_stream& stream,
                                               const common::openai::generation_request& g,
                                               const common::openai::response_meta& meta);
    // A seed for a request that brings none: a start drawn from the OS, then a counter, mixed.
    std::uint64_t fresh_seed();

    const replica_config& cfg_;
    engine& engine_;
    replica_metrics& metrics_;
    std::int64_t created_; // unix time the server started (for /v1/models)
    std::optional<common::access::digest> dump_token_; // of --kv-dump-token; none: dump off
    const std::uint64_t seed_base_;
    std::atomic<std::uint64_t> seed_count_{0};
    const generation_defaults defaults_; // the model's sampling defaults (generation_config.json)
};

} // namespace lanes::replica
