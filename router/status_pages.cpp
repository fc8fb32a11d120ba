#include "router/status_pages.hpp"

#include "common/openai/error.hpp"

#include <boost/asio.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>

namespace lanes::router {

namespace asio = boost::asio;
namespace http = common::http;
namespace openai = common::openai;
namespace bhttp = boost::beast::http;

asio::awaitable<void> status_pages::health(http::request& req, http::response_writer& out) {
    return out.answer(http::make_response(req, bhttp::status::ok, "", "text/plain"));
}

bool status_pages::ready() const {
    if (shutting_down_.load() || (warm_ && !warm_()))
        return false;
    for (const auto& r : pool_.all())
        if (r->monitor.probe_ok.load(std::memory_order_relaxed) && !r->draining.load())
            return true;
    return false;
}

asio::awaitable<void> status_pages::readiness(http::request& req, http::response_writer& out) {
    if (ready())
        return out.answer(http::make_response(req, bhttp::status::ok, "", "text/plain"));
    return out.answer(openai::error_response(
        req, openai::api_error::of(503, shutting_down_.load() ? "the router is shutting down"
                                        : warm_ && !warm_()
                                            ? "the router is reading the replicas' KV caches"
                                            : "no replica answers its health probes")));
}

std::vector<replica_reading> readings_of(const replica_pool& pool) {
    std::vector<replica_reading> out;
    for (const auto& r : pool.all()) {
        const scraped_stats s = r->stats();
        out.push_back({r->id(), r->healthy(), r->draining.load(), r->traffic.inflight.load(),
                       s.kv_usage, s.waiting, s.running});
    }
    return out;
}

asio::awaitable<void> status_pages::metrics(http::request& req, http::response_writer& out) {
    return out.answer(http::make_response(req, bhttp::status::ok,
                                          metrics_.expose(readings_of(pool_)),
                                          common::metrics::registry::content_type));
}

// The union of the models the healthy replicas serve, from their last /v1/models read.
asio::awaitable<void> status_pages::models(http::request& req, http::response_writer& out) {
    std::vector<std::string> seen;
    std::string data;
    for (const auto& r : pool_.all()) {
        if (!r->healthy())
            continue;
        const auto m = r->models();
        for (std::size_t i = 0; i < m->ids.size(); ++i) {
            if (std::find(seen.begin(), seen.end(), m->ids[i]) != seen.end())
                continue;
            seen.push_back(m->ids[i]);
            data += (data.empty() ? "" : ",") + m->objects[i];
        }
    }
    return out.answer(
        http::make_response(req, bhttp::status::ok, R"({"object":"list","data":[)" + data + "]}"));
}

} // namespace lanes::router
