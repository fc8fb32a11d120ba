// What the router says of itself: liveness always, readiness by the replicas' probes and the
// shutdown, /v1/models as the union of what the routable replicas serve.
#include "router/status_pages.hpp"

#include "tests/unit/common/http/fake_writer.hpp"
#include "tests/unit/common/http/test_servers.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace lanes;
using namespace lanes::common::http::test;
namespace router = lanes::router;
using verb = boost::beast::http::verb;
using nlohmann::json;

namespace {

struct pages {
    router::replica_pool pool;
    router::router_metrics metrics;
    router::status_pages status{pool, metrics};

    template <typename Page>
    fake_writer call(Page page, std::string_view target) {
        http::request req = make_request(verb::get, target);
        fake_writer out;
        run_coroutine([&](asio::any_io_executor) -> asio::awaitable<void> {
            co_await (status.*page)(req, out);
        });
        return out;
    }
};

router::model_list served(std::vector<std::string> ids) {
    router::model_list m;
    m.known = true;
    m.ids = ids;
    for (const auto& id : ids)
        m.objects.push_back(R"({"id":")" + id + R"(","object":"model","owned_by":"vllm"})");
    return m;
}

} // namespace

TEST_CASE("status pages: liveness is the process, readiness a probed replica", "[status]") {
    pages p;
    CHECK(p.call(&router::status_pages::health, "/health").status == 200);
    CHECK(p.call(&router::status_pages::readiness, "/readiness").status == 503); // no replica
    p.pool.add(http::url{"127.0.0.1", 9001, ""});
    p.pool.add(http::url{"127.0.0.1", 9002, ""});
    CHECK_FALSE(p.status.ready()); // added, never probed
    auto replicas = p.pool.all();
    replicas[1]->monitor.probe_ok.store(true);
    CHECK(p.status.ready());
    replicas[1]->draining.store(true);
    CHECK_FALSE(p.status.ready()); // the only probed one takes no new work
    replicas[1]->draining.store(false);
    // Backpressure is not unreadiness.
    replicas[1]->traffic.backoff_until.store(std::numeric_limits<std::int64_t>::max());
    const auto ready = p.call(&router::status_pages::readiness, "/readiness");
    CHECK(ready.status == 200);
    p.status.set_shutting_down();
    const auto leaving = p.call(&router::status_pages::readiness, "/readiness");
    CHECK(leaving.status == 503);
    CHECK(json::parse(leaving.body)["error"]["message"] == "the router is shutting down");
    CHECK(p.call(&router::status_pages::health, "/health").status == 200);
}

TEST_CASE("status pages: /v1/models is the union of the routable replicas' lists", "[status]") {
    pages p;
    for (unsigned short port : {9001, 9002, 9003})
        p.pool.add(http::url{"127.0.0.1", port, ""});
    auto replicas = p.pool.all();
    replicas[0]->set_models(served({"llama", "qwen"}));
    replicas[1]->set_models(served({"qwen"}));
    replicas[2]->set_models(served({"mistral"}));
    for (int i = 0; i < 3; ++i) // the breaker's default threshold
        replicas[2]->health.on_failure(std::chrono::steady_clock::now());
    const auto out = p.call(&router::status_pages::models, "/v1/models");
    REQUIRE(out.status == 200);
    const auto doc = json::parse(out.body);
    CHECK(doc["object"] == "list");
    std::vector<std::string> ids;
    for (const auto& m : doc["data"]) {
        ids.push_back(m["id"]);
        CHECK(m["owned_by"] == "vllm"); // each object as its replica gave it
    }
    CHECK(ids == std::vector<std::string>{"llama", "qwen"}); // once each; not the ejected one's
}
