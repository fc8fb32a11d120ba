// What a client and an operator can learn from each answer: an x-request-id on every one
// (refusals included) and an access line for each refusal; a 503 that names the model and why
// none of its replicas can take it; a 404 for a model no readable list names, though a replica is
// unreachable; each replica's models in the admin API; the fleet hit rate as one gauge.
#include "fake_engine.hpp"
#include "traffic.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <fstream>
#include <string>

#include <unistd.h>

using namespace lanes;
using namespace lanes::test;
using namespace std::chrono_literals;
using verb = boost::beast::http::verb;
using nlohmann::json;

namespace {

const std::string body = R"({"model":"m","prompt":"hello","max_tokens":2})";

// The number of lines of `log` holding every one of `parts`.
int lines_with(const std::string& log, std::initializer_list<std::string_view> parts) {
    int n = 0;
    std::size_t at = 0;
    while (at < log.size()) {
        std::size_t end = log.find('\n', at);
        if (end == std::string::npos)
            end = log.size();
        const std::string_view line(log.data() + at, end - at);
        bool all = true;
        for (const auto p : parts)
            all = all && line.find(p) != std::string_view::npos;
        n += all ? 1 : 0;
        at = end + 1;
    }
    return n;
}

} // namespace

TEST_CASE("every answer carries x-request-id and every refusal an access line",
          "[router][access]") {
    fake_engine engine({"m"});
    const std::string keys_path = "/tmp/lanes-traceable-" + std::to_string(::getpid());
    std::ofstream(keys_path) << "sk-ok ok\n";
    process router(LANES_ROUTER_BIN,
                   {"--host", "127.0.0.1", "--port", "0", "--replica", engine.url(),
                    "--api-key-file", keys_path, "--health-interval", "50ms", "--models-interval",
                    "100ms", "--body-limit", "4096"});
    REQUIRE(wait_healthy(router.port(), 10s));
    const common::http::header_list key = {{"Authorization", "Bearer sk-ok"}};
    REQUIRE(eventually(
        [&] { return post_json(router.port(), "/v1/completions", body, key).status == 200; }, 5s));
    const auto port = router.port();
    CHECK(router.log().find("1 API key(s) loaded from " + keys_path) != std::string::npos);
    const auto with_id = [&](std::string id) {
        common::http::header_list h = key;
        h.emplace_back("x-request-id", std::move(id));
        return h;
    };

    // A client's acceptable id comes back on a refusal as on an answer.
    const auto no_key = post_json(port, "/v1/completions", body, {{"x-request-id", "client.id-1"}});
    CHECK(no_key.status == 401);
    CHECK(no_key.header("x-request-id") == "client.id-1");
    CHECK(json::parse(no_key.body)["error"]["type"] == "AuthenticationError");
    const auto ok = post_json(port, "/v1/completions", body, with_id("client.id-2"));
    CHECK(ok.status == 200);
    CHECK(ok.header("x-request-id") == "client.id-2");
    CHECK(engine.requests("/v1/completions").back().header("x-request-id") == "client.id-2");

    // One that is not acceptable is replaced; the engine hears the client's as
    // x-client-request-id.
    const auto odd = post_json(port, "/v1/completions", body, with_id("has space/and slash"));
    CHECK(odd.status == 200);
    const std::string made = odd.header("x-request-id");
    CHECK(made.starts_with("req-"));
    const auto seen = engine.requests("/v1/completions").back();
    CHECK(seen.header("x-request-id") == made);
    CHECK(seen.header("x-client-request-id") == "has space/and slash");

    // Refusals of every kind: each has an id and a line.
    const auto bad_json = post_json(port, "/v1/completions", R"({"model":)", key);
    CHECK(bad_json.status == 400);
    const auto unknown =
        post_json(port, "/v1/completions", R"({"model":"nope","prompt":"x","max_tokens":1})", key);
    CHECK(unknown.status == 404);
    const auto too_big = post_json(
        port, "/v1/completions",
        R"({"model":"m","prompt":")" + std::string(8000, 'a') + R"(","max_tokens":1})", key);
    CHECK(too_big.status == 413);
    const auto no_route = request(port, verb::get, "/v1/nothing-here", "", key);
    CHECK(no_route.status == 404);
    const auto models = request(port, verb::get, "/v1/models", "", key);
    CHECK(models.status == 200);
    for (const reply* r : {&bad_json, &unknown, &too_big, &no_route, &models})
        CHECK(r->header("x-request-id").starts_with("req-"));

    REQUIRE(eventually(
        [&] { return router.log().find("reason=body_too_large") != std::string::npos; }, 5s));
    const std::string log = router.log();
    CHECK(lines_with(log, {"client.id-1", "status=401", "reason=invalid_api_key"}) == 1);
    CHECK(lines_with(
              log, {bad_json.header("x-request-id"), "status=400", "reason=invalid_request"}) == 1);
    CHECK(lines_with(log, {unknown.header("x-request-id"), "status=404", "reason=unknown_model"}) ==
          1);
    CHECK(lines_with(log, {no_route.header("x-request-id"), "status=404", "reason=no_route"}) == 1);
    CHECK(lines_with(log, {too_big.header("x-request-id"), "status=413"}) == 1);
    // The routed ones have their usual line only.
    CHECK(lines_with(log, {"client.id-2", "status=200"}) == 1);
    CHECK(lines_with(log, {"client.id-2", "reason=refused"}) == 0);
    std::remove(keys_path.c_str());
}

TEST_CASE("a flood of refusals is logged at the configured rate, with the rest counted",
          "[router][access]") {
    fake_engine engine({"m"});
    process router(LANES_ROUTER_BIN,
                   {"--host", "127.0.0.1", "--port", "0", "--replica", engine.url(),
                    "--health-interval", "50ms", "--refusal-log-rate", "5"});
    REQUIRE(wait_healthy(router.port(), 10s));
    for (int i = 0; i < 60; ++i)
        CHECK(post_json(router.port(), "/v1/completions", "[1,2]").status == 400);
    const int logged = lines_with(router.log(), {"status=400", "reason=invalid_request"});
    CHECK(logged >= 5);
    CHECK(logged < 30);
    // The next line after a pause says how many were left out.
    std::this_thread::sleep_for(1200ms);
    CHECK(post_json(router.port(), "/v1/completions", "[1,2]").status == 400);
    REQUIRE(eventually(
        [&] {
            return router.log().find("refusals not logged since the last") != std::string::npos;
        },
        5s));
}

TEST_CASE("a 503 names the model and the cause, an unknown model is 404 beside a dead replica",
          "[router][admin]") {
    fake_engine llama({"llama"});
    fake_engine qwen({"qwen"});
    process router(LANES_ROUTER_BIN,
                   {"--host", "127.0.0.1", "--port", "0", "--admin-port", "0", "--replica",
                    llama.url(), "--replica", qwen.url(), "--replica", "http://127.0.0.1:1",
                    "--health-interval", "50ms", "--models-interval", "100ms",
                    "--admin-insecure-loopback"});
    REQUIRE(wait_healthy(router.port(), 10s));
    const auto port = router.port();
    const auto ask = [&](const std::string& model) {
        return post_json(port, "/v1/completions",
                         R"({"model":")" + model + R"(","prompt":"hi","max_tokens":1})");
    };
    REQUIRE(
        eventually([&] { return ask("qwen").status == 200 && ask("llama").status == 200; }, 5s));
    // The unreachable replica's list is never read: it does not make a typo a 5xx.
    const auto typo = ask("qwne");
    CHECK(typo.status == 404);
    CHECK(json::parse(typo.body)["error"]["message"] == "The model `qwne` does not exist.");

    // Each replica's models, as read (null for the one never read).
    const auto replicas = json::parse(get(router.admin_port(), "/admin/replicas").body);
    bool saw_llama = false, saw_unread = false;
    for (const auto& r : replicas) {
        if (r["url"] == llama.url())
            saw_llama = r["models"] == json::array({"llama"});
        if (r["url"] == "http://127.0.0.1:1")
            saw_unread = r["models"].is_null();
    }
    CHECK(saw_llama);
    CHECK(saw_unread);
    CHECK(router.log().find(qwen.url() + " serves [\"qwen\"]") != std::string::npos);

    // Draining qwen's only replica: 503 naming the model and the drain.
    REQUIRE(
        post_json(router.admin_port(), "/admin/replicas/drain", json{{"url", qwen.url()}}.dump())
            .status == 200);
    const auto drained = ask("qwen");
    CHECK(drained.status == 503);
    const std::string message = json::parse(drained.body)["error"]["message"];
    CHECK(message.find("model 'qwen'") != std::string::npos);
    CHECK(message.find("1 draining") != std::string::npos);
    CHECK(json::parse(drained.body)["error"]["type"] == "ServiceUnavailableError");
    CHECK(!drained.header("retry-after").empty());
    CHECK(ask("llama").status == 200);
}

TEST_CASE("the fleet hit rate is one gauge, from the replicas' own counters", "[router][metrics]") {
    test::fleet f(2, {"--backend", "sim", "--sim-speedup", "50"},
                  {"--scrape-interval", "50ms", "--policy", "prefix"});
    const auto port = f.router->port();
    const std::string metrics_before = get(port, "/metrics").body;
    CHECK(metrics_before.find("lanes_router_prefix_cache_hit_ratio NaN") != std::string::npos);
    const std::string prompt(400, 'p');
    for (int i = 0; i < 6; ++i)
        REQUIRE(
            post_json(port, "/v1/completions", R"({"prompt":")" + prompt + R"(","max_tokens":1})")
                .status == 200);
    // Five of six see the first's 24 cached blocks: a ratio well above zero, below one.
    double ratio = -1;
    REQUIRE(eventually(
        [&] {
            const std::string text = get(port, "/metrics").body;
            const std::string name = "\nlanes_router_prefix_cache_hit_ratio ";
            const auto at = text.find(name);
            if (at == std::string::npos)
                return false;
            const auto from = at + name.size();
            const std::string value = text.substr(from, text.find('\n', from) - from);
            if (value == "NaN")
                return false;
            ratio = std::stod(value);
            return ratio > 0.5;
        },
        5s));
    CHECK(ratio < 1.0);
}

TEST_CASE("a router with no replicas says so at start and in each 503", "[router]") {
    process router(LANES_ROUTER_BIN, {"--host", "127.0.0.1", "--port", "0"});
    REQUIRE(wait_healthy(router.port(), 10s));
    const auto r = post_json(router.port(), "/v1/completions", body);
    CHECK(r.status == 503);
    CHECK(json::parse(r.body)["error"]["message"].get<std::string>().starts_with(
        "the router has no replicas"));
    CHECK(router.log().find("WARN router no replicas") != std::string::npos);
}
