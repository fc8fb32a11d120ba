#include "router/proxy/client_limits.hpp"

#include "common/openai/error.hpp"
#include "router/access/request_cost.hpp"
#include "router/metrics.hpp"
#include "router/proxy/accounting.hpp"

#include <string>

namespace lanes::router {

namespace http = common::http;
namespace openai = common::openai;

client_limits::client_limits(const rate_settings& defaults, router_metrics& metrics,
                             accounting& counts)
    : limiter_(defaults)
    , metrics_(metrics)
    , counts_(counts) {}

std::optional<http::response> client_limits::take_request(const http::request& req,
                                                          const client& who) {
    const limit_verdict v = limiter_.take_request(who.identity, who.limits());
    if (v.allowed)
        return std::nullopt;
    metrics_.access_refusals.with({"rate_limit_requests"}).inc();
    return refusal(req, who, "requests", v);
}

std::optional<http::response> client_limits::check_request(const http::request& req,
                                                           const client& who) {
    if (limiter_.rps_for(who.limits()) <= 0)
        return std::nullopt;
    const limit_verdict v =
        limiter_.peek_request(who.identity, who.limits(), rate_limiter::clock::now());
    if (v.allowed)
        return std::nullopt;
    metrics_.access_refusals.with({"rate_limit_requests"}).inc();
    return refusal(req, who, "requests", v);
}

std::optional<http::response>
client_limits::take_tokens(const http::request& req, const client& who, std::size_t prompt_tokens) {
    if (limiter_.tpm_for(who.limits()) <= 0)
        return std::nullopt;
    const double cost = static_cast<double>(prompt_tokens) +
                        static_cast<double>(requested_output_tokens(req.body()));
    const limit_verdict v = limiter_.take_tokens(who.identity, who.limits(), cost);
    if (v.allowed)
        return std::nullopt;
    metrics_.access_refusals.with({"rate_limit_tokens"}).inc();
    return refusal(req, who, "tokens", v);
}

http::response client_limits::refusal(const http::request& req, const client& who,
                                      std::string_view kind, const limit_verdict& v) {
    counts_.count_for_key(who, 429);
    const std::string k(kind);
    openai::api_error e = openai::api_error::of(
        429, "Rate limit reached for " + k +
                 (who.key ? " of key " + who.key->name : std::string()) + ": limit " +
                 std::to_string(static_cast<long long>(v.state.limit)) +
                 (kind == "tokens" ? " tokens a minute" : " requests in a burst") +
                 ". Retry after " + reset_text(v.retry_after) + " (the whole limit is back in " +
                 reset_text(v.state.reset) + ").");
    e.code = "rate_limit_exceeded";
    auto res = openai::error_response(req, e);
    http::set_retry_after(res, v.retry_after);
    res.set("x-ratelimit-limit-" + k, std::to_string(static_cast<long long>(v.state.limit)));
    res.set("x-ratelimit-remaining-" + k,
            std::to_string(static_cast<long long>(v.state.remaining)));
    res.set("x-ratelimit-reset-" + k, reset_text(v.state.reset));
    return res;
}

} // namespace lanes::router
