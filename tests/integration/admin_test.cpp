// The router's admin API with real processes: drain, add and remove, DNS discovery.
#include "traffic.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <csignal>

#include <unistd.h>

using namespace lanes;
using namespace lanes::test;
using namespace std::chrono_literals;
using verb = boost::beast::http::verb;

TEST_CASE("drain lets in-flight requests finish and sends no new work", "[router][admin]") {
    test::fleet f(2, {"--backend", "sim", "--sim-speedup", "2"},
                  {"--policy", "round_robin", "--admin-insecure-loopback"});
    const auto port = f.router->port();
    const auto admin_port = f.router->admin_port();
    const std::string drained = f.replicas[0]->url();
    // A slow request in flight on each replica while we drain one of them.
    std::vector<std::thread> inflight;
    std::atomic<int> ok{0};
    for (int i = 0; i < 2; ++i)
        inflight.emplace_back([&] {
            if (test::post_json(port, "/v1/completions",
                                R"({"prompt":"slow one","max_tokens":30,"ignore_eos":true})")
                    .status == 200)
                ++ok;
        });
    REQUIRE(eventually(
        [&] {
            int busy = 0;
            for (const auto& r :
                 nlohmann::json::parse(test::get(admin_port, "/admin/replicas").body))
                busy += r["inflight"].get<int>();
            return busy == 2;
        },
        5s));
    const auto d = test::post_json(admin_port, "/admin/replicas/drain",
                                   nlohmann::json{{"url", drained}}.dump());
    REQUIRE(d.status == 200);
    for (int i = 0; i < 10; ++i) {
        const auto r = test::post_json(port, "/v1/completions", R"({"prompt":"x","max_tokens":1})");
        CHECK(r.status == 200);
        CHECK(r.header("x-lanes-replica") != drained);
    }
    for (auto& t : inflight)
        t.join();
    CHECK(ok == 2); // the drained replica finished its in-flight request
    const auto list = nlohmann::json::parse(test::get(admin_port, "/admin/replicas").body);
    for (const auto& r : list)
        if (r["url"] == drained)
            CHECK(r["draining"] == true);
}

TEST_CASE("admin API: list, add, remove, SGLang paths, auth", "[router][admin]") {
    test::fleet f(1, {"--backend", "sim", "--sim-speedup", "20"}, {"--admin-token", "s3cret"});
    const auto port = f.router->admin_port();
    const test::reply no_token = test::get(port, "/admin/replicas");
    CHECK(no_token.status == 401);
    CHECK(test::request(port, verb::get, "/admin/replicas", "", {{"Authorization", "Bearer s3cre"}})
              .status == 401);
    const common::http::header_list auth = {{"Authorization", "Bearer s3cret"}};
    auto call = [&](verb m, const std::string& path, const std::string& body = "") {
        return test::request(port, m, path, body, auth);
    };
    auto list = nlohmann::json::parse(call(verb::get, "/admin/replicas").body);
    REQUIRE(list.size() == 1);
    for (const char* key :
         {"url", "healthy", "draining", "inflight", "kv_usage", "waiting", "running",
          "prefix_cache_hits", "prefix_cache_queries", "requests_total"})
        CHECK(list[0].contains(key));
    test::process extra(LANES_REPLICA_BIN, {"--port", "0", "--backend", "sim"});
    CHECK(call(verb::post, "/admin/replicas", nlohmann::json{{"url", extra.url()}}.dump()).status ==
          201);
    CHECK(call(verb::post, "/admin/replicas", nlohmann::json{{"url", extra.url()}}.dump()).status ==
          409);
    CHECK(call(verb::post, "/admin/replicas", R"({"url":"ftp://x"})").status == 400);
    CHECK(nlohmann::json::parse(call(verb::get, "/list_workers").body)["urls"].size() == 2);
    CHECK(call(verb::post, "/remove_worker?url=" + extra.url()).status == 200);
    CHECK(call(verb::post, "/add_worker?url=" + extra.url()).status == 201);
    const std::string up_line = "lanes_router_replica_up{replica=\"" + extra.url() + "\"}";
    CHECK(test::get(f.router->port(), "/metrics").body.find(up_line) != std::string::npos);
    CHECK(call(verb::delete_, "/admin/replicas?url=" + extra.url()).status == 200);
    CHECK(test::get(f.router->port(), "/metrics").body.find(up_line) ==
          std::string::npos); // gone with it
    CHECK(nlohmann::json::parse(call(verb::get, "/admin/replicas").body).size() == 1);
    CHECK(call(verb::delete_, "/admin/replicas?url=" + extra.url()).status == 404);
    // A wrong method is 405 with Allow, an unknown path 404, before any ?url= is looked for.
    const auto wrong = call(verb::get, "/admin/replicas/drain");
    CHECK(wrong.status == 405);
    CHECK(wrong.header("allow") == "POST");
    CHECK(nlohmann::json::parse(wrong.body)["error"]["code"] == 405);
    const auto put =
        call(verb::put, "/admin/replicas", nlohmann::json{{"url", extra.url()}}.dump());
    CHECK(put.status == 405);
    CHECK(put.header("allow") == "GET, HEAD, POST, DELETE");
    CHECK(call(verb::get, "/admin/typo").status == 404);
    CHECK(call(verb::head, "/admin/replicas").status == 200);
}

TEST_CASE("DNS discovery: --replica-dns turns a resolved name into replicas", "[router][dns]") {
    test::process replica(LANES_REPLICA_BIN, {"--port", "0", "--backend", "sim"});
    REQUIRE(test::wait_healthy(replica.port(), 10s));
    test::process router(LANES_ROUTER_BIN,
                         {"--host", "127.0.0.1", "--port", "0", "--replica-dns",
                          "localhost:" + std::to_string(replica.port()), "--dns-interval", "100ms",
                          "--admin-insecure-loopback"});
    REQUIRE(test::wait_healthy(router.port(), 10s));
    const std::string expected = "http://127.0.0.1:" + std::to_string(replica.port());
    CHECK(eventually(
        [&] {
            for (const auto& r :
                 nlohmann::json::parse(test::get(router.admin_port(), "/admin/replicas").body))
                if (r["url"] == expected &&
                    r["source"] == "localhost:" + std::to_string(replica.port()))
                    return true;
            return false;
        },
        5s));
    CHECK(test::post_json(router.port(), "/v1/completions", R"({"prompt":"dns","max_tokens":2})")
              .status == 200);
    // Its next resolution would add it again: removing it is refused, draining is the way.
    CHECK(test::request(router.admin_port(), verb::delete_, "/admin/replicas?url=" + expected, "",
                        {{"Content-Type", "application/json"}})
              .status == 409);
    CHECK(test::post_json(router.admin_port(), "/admin/replicas/drain",
                          nlohmann::json{{"url", expected}}.dump())
              .status == 200);
}

TEST_CASE("admin lives on its own listener: not on the traffic port, no change without a token",
          "[router][admin]") {
    test::fleet f(1, {"--backend", "sim"}, {});
    const auto traffic = f.router->port();
    const auto admin_port = f.router->admin_port();
    REQUIRE(admin_port != traffic);
    CHECK(f.router->log().find("admin listening on http://127.0.0.1:") != std::string::npos);
    // The traffic port serves no admin path at all, whoever asks.
    for (const char* path : {"/admin/replicas", "/list_workers"})
        CHECK(test::get(traffic, path).status == 404);
    for (const char* path : {"/add_worker?url=http://127.0.0.1:9", "/remove_worker?url=x"})
        CHECK(test::request(traffic, verb::post, path, "").status == 404);
    CHECK(test::post_json(traffic, "/admin/replicas", R"({"url":"http://127.0.0.1:9"})").status ==
          404);
    // The admin listener reads to loopback clients, and serves health and metrics too.
    CHECK(test::get(admin_port, "/admin/replicas").status == 200);
    CHECK(test::get(admin_port, "/health").status == 200);
    CHECK(test::get(admin_port, "/metrics").body.find("lanes_router_replica_up") !=
          std::string::npos);
    CHECK(test::get(admin_port, "/v1/models").status == 404); // no traffic on the admin port
    // Without a token a change is refused, JSON or not.
    CHECK(
        test::post_json(admin_port, "/admin/replicas", R"({"url":"http://127.0.0.1:9"})").status ==
        403);
    CHECK(test::request(admin_port, verb::post, "/add_worker?url=http://127.0.0.1:9", "").status ==
          403);
    CHECK(nlohmann::json::parse(test::get(admin_port, "/admin/replicas").body).size() == 1);
}

TEST_CASE("admin without a token: loopback changes need the flag and a JSON content type",
          "[router][admin]") {
    test::fleet f(1, {"--backend", "sim"}, {"--admin-insecure-loopback"});
    const auto admin_port = f.router->admin_port();
    const std::string extra = "http://127.0.0.1:9";
    // What a cross-site form POST can send: refused.
    for (const char* type :
         {"application/x-www-form-urlencoded", "text/plain", "multipart/form-data; boundary=x"})
        CHECK(test::request(admin_port, verb::post, "/add_worker?url=" + extra, "url=x",
                            {{"Content-Type", type}})
                  .status == 415);
    CHECK(test::request(admin_port, verb::post, "/add_worker?url=" + extra, "",
                        {{"Content-Type", ""}})
              .status == 415);
    const auto added = test::request(admin_port, verb::post, "/add_worker?url=" + extra, "",
                                     {{"Content-Type", "application/json; charset=utf-8"}});
    CHECK(added.status == 201);
    CHECK(nlohmann::json::parse(test::get(admin_port, "/admin/replicas").body).size() == 2);
}

TEST_CASE("the admin token can come from a file", "[router][admin]") {
    char path[] = "/tmp/lanes-admin-token-XXXXXX";
    const int fd = ::mkstemp(path);
    REQUIRE(fd >= 0);
    const std::string text = "from-a-file  \nignored second line\n";
    REQUIRE(::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
    ::close(fd);
    {
        test::fleet f(1, {"--backend", "sim"}, {"--admin-token-file", path});
        const auto admin_port = f.router->admin_port();
        CHECK(test::get(admin_port, "/admin/replicas").status == 401);
        CHECK(test::request(admin_port, verb::get, "/admin/replicas", "",
                            {{"Authorization", "bearer from-a-file"}})
                  .status == 200);
    }
    ::unlink(path);
}
