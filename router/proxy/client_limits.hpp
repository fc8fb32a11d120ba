// A client's rate limits as answers: a request over its key's (or address's) limit of requests
// at once, or of tokens a minute, gets OpenAI's 429 with Retry-After and the x-ratelimit-*
// fields; the front asks before routing, the planner once it knows the prompt's size.
#pragma once

#include "common/http/message.hpp"
#include "router/access/client.hpp"
#include "router/access/rate_limit.hpp"

#include <cstddef>
#include <optional>
#include <string_view>

namespace lanes::router {

class accounting;
class router_metrics;

class client_limits {
public:
    client_limits(const rate_settings& defaults, router_metrics& metrics, accounting& counts);

    // Takes one request from `who`'s concurrent budget: the 429 when it is spent, else nullopt.
    std::optional<common::http::response> take_request(const common::http::request& req,
                                                       const client& who);
    // Whether take_request would refuse `who` now, taking nothing: the 429 (counted as a
    // refusal) or nullopt.
    std::optional<common::http::response> check_request(const common::http::request& req,
                                                        const client& who);
    // Takes a request's tokens (`prompt_tokens` plus the output it asks for) from `who`'s token
    // bucket: the 429 when the bucket is short, else nullopt.
    std::optional<common::http::response> take_tokens(const common::http::request& req,
                                                      const client& who, std::size_t prompt_tokens);

private:
    // The 429 of a request over a limit (`kind`: "requests" or "tokens").
    common::http::response refusal(const common::http::request& req, const client& who,
                                   std::string_view kind, const limit_verdict& v);

    rate_limiter limiter_;
    router_metrics& metrics_;
    accounting& counts_;
};

} // namespace lanes::router
