// KV events through the real binaries: lanes replicas publish, the router subscribes from what
// their metrics announce and routes on the replicas' own word; a replica killed -9 and restarted
// on its port is not sent its old prefixes; a router that starts late reads the replicas' block
// dumps and is cache-aware at once.
#include "traffic.hpp"

#include <catch2/catch.hpp>

#include <csignal>
#include <cstdio>
#include <fstream>
#include <map>
#include <set>

#include <unistd.h>

using namespace lanes;
using namespace lanes::test;
using namespace std::chrono_literals;

namespace {

const std::vector<std::string> event_flags = {"--kv-events-endpoint", "tcp://127.0.0.1:*",
                                              "--kv-events-replay-endpoint", "tcp://127.0.0.1:*"};

std::unique_ptr<process> publishing_replica(unsigned short port, int seed) {
    std::vector<std::string> args = {"--port", std::to_string(port), "--seed",
                                     std::to_string(seed)};
    args.insert(args.end(), event_flags.begin(), event_flags.end());
    auto r = std::make_unique<process>(LANES_REPLICA_BIN, args);
    REQUIRE(wait_healthy(r->port(), 10s));
    return r;
}

bool live(unsigned short router_port, const std::string& replica_url) {
    const std::string text = get(router_port, "/metrics").body;
    return text.find("lanes_router_kv_events_live{replica=\"" + replica_url + "\"} 1") !=
           std::string::npos;
}

std::string prompt(int i) {
    std::string p = "Document " + std::to_string(i) + ": ";
    while (p.size() < 160)
        p += "the quick brown fox " + std::to_string(i) + " ";
    return p;
}

reply complete(unsigned short port, int i) {
    return post_json(port, "/v1/completions",
                     R"({"prompt":")" + prompt(i) + R"(","max_tokens":2})");
}

} // namespace

TEST_CASE("kv events: routed on the replicas' word, and a restarted replica loses its prefixes",
          "[kv_events]") {
    std::vector<std::unique_ptr<process>> replicas;
    replicas.push_back(publishing_replica(0, 0));
    replicas.push_back(publishing_replica(0, 1));
    process router(LANES_ROUTER_BIN,
                   {"--host", "127.0.0.1", "--port", "0", "--replica", replicas[0]->url(),
                    "--replica", replicas[1]->url(), "--scrape-interval", "100ms",
                    "--health-interval", "50ms", "--access-log", "false"});
    REQUIRE(wait_healthy(router.port(), 10s));
    for (const auto& r : replicas)
        REQUIRE(eventually([&] { return live(router.port(), r->url()); }, 5s));

    std::map<int, std::string> placed;
    for (int i = 0; i < 8; ++i) {
        const auto r = complete(router.port(), i);
        REQUIRE(r.status == 200);
        placed[i] = r.header("x-lanes-replica");
    }
    // The same prompts again: each where the replica's events say its prefix is.
    for (int i = 0; i < 8; ++i) {
        const auto r = complete(router.port(), i);
        REQUIRE(r.status == 200);
        CHECK(r.header("x-lanes-replica") == placed[i]);
        CHECK(r.header("x-lanes-route-reason") == "prefix_match_precise");
    }

    // kill -9 the replica holding prompt 0, and start it again on its port: an empty cache.
    const std::string victim = placed[0];
    const std::size_t v = replicas[0]->url() == victim ? 0 : 1;
    const unsigned short port = replicas[v]->port();
    replicas[v]->signal(SIGKILL);
    REQUIRE(replicas[v]->wait(5s) != -1);
    replicas[v] = publishing_replica(port, 7);
    const auto restarted = std::chrono::steady_clock::now();
    std::this_thread::sleep_for(1s);
    std::set<int> old;
    for (const auto& [i, url] : placed)
        if (url == victim)
            old.insert(i);
    REQUIRE(!old.empty());
    for (const int i : old) {
        const auto r = complete(router.port(), i);
        REQUIRE(r.status == 200);
        INFO("prompt " << i << " went to " << r.header("x-lanes-replica") << " for "
                       << r.header("x-lanes-route-reason"));
        // Not sent to the restarted replica on the strength of a prefix it no longer holds.
        const bool stale = r.header("x-lanes-replica") == victim &&
                           r.header("x-lanes-route-reason").starts_with("prefix_match");
        CHECK_FALSE(stale);
    }
    // And the router follows the new process's events (it announces a new port).
    CHECK(eventually([&] { return live(router.port(), victim); }, 5s));
    INFO("resubscribed " << std::chrono::duration_cast<std::chrono::milliseconds>(
                                std::chrono::steady_clock::now() - restarted)
                                .count()
                         << " ms after the restart");
    CHECK(router.log().find("subscribed to") != std::string::npos);
}

TEST_CASE("kv events: replicas without a replay socket are routed on their word from their first "
          "request",
          "[kv_events]") {
    // Only the PUB socket, as vLLM's --kv-events-config is often given: the stream's opening
    // batch goes out with the first request's blocks, after the router has subscribed.
    std::vector<std::unique_ptr<process>> replicas;
    for (int seed = 0; seed < 2; ++seed) {
        replicas.push_back(std::make_unique<process>(
            LANES_REPLICA_BIN,
            std::vector<std::string>{"--port", "0", "--seed", std::to_string(seed),
                                     "--kv-events-endpoint", "tcp://127.0.0.1:*"}));
        REQUIRE(wait_healthy(replicas.back()->port(), 10s));
    }
    process router(LANES_ROUTER_BIN, {"--host", "127.0.0.1", "--port", "0", "--replica",
                                      replicas[0]->url(), "--replica", replicas[1]->url(),
                                      "--scrape-interval", "100ms", "--access-log", "false"});
    REQUIRE(wait_healthy(router.port(), 10s));
    REQUIRE(eventually([&] { return get(router.port(), "/readiness").status == 200; }, 5s));
    // Subscribing is asynchronous in ZeroMQ: a batch sent before the subscription reaches the
    // replica is dropped by its PUB socket.
    std::this_thread::sleep_for(scaled(300ms));
    CHECK_FALSE(live(router.port(), replicas[0]->url())); // nothing published yet

    std::map<int, std::string> placed;
    for (int i = 0; i < 6; ++i) {
        const auto r = complete(router.port(), i);
        REQUIRE(r.status == 200);
        placed[i] = r.header("x-lanes-replica");
    }
    for (const auto& r : replicas) {
        INFO(r->url() << "\n" << router.log());
        CHECK(eventually([&] { return live(router.port(), r->url()); }, 5s));
    }
    for (int i = 0; i < 6; ++i) {
        const auto r = complete(router.port(), i);
        REQUIRE(r.status == 200);
        INFO("prompt " << i);
        CHECK(r.header("x-lanes-replica") == placed[i]);
        CHECK(r.header("x-lanes-route-reason") == "prefix_match_precise");
    }
    CHECK(router.log().find("could not be replayed") == std::string::npos);
}

TEST_CASE("kv events: a router that starts late warms up from the replicas' block dumps",
          "[kv_events]") {
    const std::string token_file = "kv-dump-token-" + std::to_string(::getpid());
    std::ofstream(token_file) << "dump-secret\n";
    // Replay buffers of 3 batches: after a few requests they no longer reach back to batch 0,
    // so a router joining now has only the dump to go by.
    auto start = [&](int seed, bool dump) {
        std::vector<std::string> args = {
            "--port", "0", "--seed", std::to_string(seed), "--kv-events-buffer-steps", "3"};
        args.insert(args.end(), event_flags.begin(), event_flags.end());
        if (dump) {
            args.push_back("--kv-dump-token-file");
            args.push_back(token_file);
        }
        auto r = std::make_unique<process>(LANES_REPLICA_BIN, args);
        REQUIRE(wait_healthy(r->port(), 10s));
        return r;
    };
    auto with_dump = start(0, true);
    auto without = start(1, false);
    for (int i = 0; i < 6; ++i) {
        REQUIRE(complete(with_dump->port(), i).status == 200);
        REQUIRE(complete(without->port(), 100 + i).status == 200);
    }

    // The dump itself: behind its token, off where no token is set.
    const auto dump = [](unsigned short port, const std::string& auth) {
        common::http::header_list h;
        if (!auth.empty())
            h.emplace_back("Authorization", auth);
        return request(port, boost::beast::http::verb::get, "/kv-events/blocks", "", h);
    };
    CHECK(dump(with_dump->port(), "").status == 401);
    CHECK(dump(with_dump->port(), "Bearer wrong").status == 401);
    CHECK(dump(without->port(), "Bearer dump-secret").status == 404);
    const auto ok = dump(with_dump->port(), "Bearer dump-secret");
    REQUIRE(ok.status == 200);
    CHECK(ok.content_type == "application/vnd.msgpack");
    CHECK(std::stoll(ok.header("lanes-kv-events-next-seq")) >= 6);

    const auto router_for = [&](bool token) {
        std::vector<std::string> args = {"--host",    "127.0.0.1",    "--port",
                                         "0",         "--replica",    with_dump->url(),
                                         "--replica", without->url(), "--scrape-interval",
                                         "100ms",     "--access-log", "false"};
        if (token) {
            args.push_back("--kv-bootstrap-token-file");
            args.push_back(token_file);
        }
        auto r = std::make_unique<process>(LANES_ROUTER_BIN, args);
        REQUIRE(wait_healthy(r->port(), 10s));
        return r;
    };
    // Without the token the late router cannot know either replica's cache.
    {
        auto blind = router_for(false);
        std::this_thread::sleep_for(scaled(1500ms));
        CHECK_FALSE(live(blind->port(), with_dump->url()));
        CHECK_FALSE(live(blind->port(), without->url()));
    }
    const auto started = std::chrono::steady_clock::now();
    auto router = router_for(true);
    // Ready only once it has read what the replicas hold: then at once cache-aware.
    REQUIRE(
        eventually([&] { return get(router->port(), "/readiness").status == 200; }, scaled(1s)));
    CHECK(live(router->port(), with_dump->url()));
    INFO("live " << std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - started)
                        .count()
                 << " ms after the router started");
    CHECK_FALSE(live(router->port(), without->url())); // no dump to read: approximate
    // Each prompt the replica served before the router existed goes back to it, on its word.
    for (int i = 0; i < 6; ++i) {
        const auto r = complete(router->port(), i);
        REQUIRE(r.status == 200);
        CHECK(r.header("x-lanes-replica") == with_dump->url());
        CHECK(r.header("x-lanes-route-reason") == "prefix_match_precise");
    }
    const std::string metrics = get(router->port(), "/metrics").body;
    CHECK(metrics.find("lanes_router_kv_bootstraps_total{outcome=\"ok\",replica=\"" +
                       with_dump->url() + "\"} 1.0") != std::string::npos);
    std::remove(token_file.c_str());
}

TEST_CASE("kv events: chat prompts tokenized by the engine route on its events", "[kv_events]") {
    std::vector<std::unique_ptr<process>> replicas;
    replicas.push_back(publishing_replica(0, 0));
    replicas.push_back(publishing_replica(0, 1));
    // The replica's own /tokenize: the chat template applied as the engine applies it.
    const auto t = post_json(replicas[0]->port(), "/tokenize",
                             R"({"messages":[{"role":"user","content":"hi"}]})");
    REQUIRE(t.status == 200);
    const auto answer = nlohmann::json::parse(t.body);
    CHECK(answer["count"] == answer["tokens"].size());
    CHECK(answer["count"].get<int>() > 2);
    CHECK(post_json(replicas[0]->port(), "/tokenize", R"({"prompt":"ab"})")
              .body.find(R"("tokens":[256,97,98])") != std::string::npos);
    CHECK(post_json(replicas[0]->port(), "/tokenize", R"({"model":"nope","prompt":"ab"})").status ==
          404);
    // Its body is bounded before a DOM is built, as a generation request's is: 400, and the
    // replica goes on answering.
    const auto deep = post_json(replicas[0]->port(), "/tokenize",
                                R"({"prompt":"ab","x":)" + std::string(100'000, '[') +
                                    std::string(100'000, ']') + "}");
    CHECK(deep.status == 400);
    CHECK(deep.body.find("--json-max-depth") != std::string::npos);
    std::string wide = R"({"prompt":"ab","x":[)";
    for (int i = 0; i < 1'100'000; ++i)
        wide += i ? ",0" : "0";
    wide += "]}";
    const auto many = post_json(replicas[0]->port(), "/tokenize", wide);
    CHECK(many.status == 400);
    CHECK(many.body.find("--json-max-values") != std::string::npos);
    CHECK(post_json(replicas[0]->port(), "/tokenize", R"({"prompt":"ab"})").status == 200);

    const auto start_router = [&](const std::string& endpoint) {
        return std::make_unique<process>(
            LANES_ROUTER_BIN,
            std::vector<std::string>{
                "--host", "127.0.0.1", "--port", "0", "--replica", replicas[0]->url(), "--replica",
                replicas[1]->url(), "--scrape-interval", "100ms", "--access-log", "false",
                "--tokenize-endpoint", endpoint, "--tokenize-timeout", "300ms"});
    };
    auto router = start_router(replicas[1]->url());
    REQUIRE(wait_healthy(router->port(), 10s));
    for (const auto& r : replicas) {
        REQUIRE(eventually([&] { return live(router->port(), r->url()); }, 5s));
    }
    const auto chat = [&](unsigned short port, int i) {
        return post_json(port, "/v1/chat/completions",
                         R"({"messages":[{"role":"system","content":")" + prompt(i) +
                             R"("},{"role":"user","content":"go"}],"max_tokens":2})");
    };
    std::map<int, std::string> placed;
    for (int i = 0; i < 6; ++i) {
        const auto r = chat(router->port(), i);
        REQUIRE(r.status == 200);
        placed[i] = r.header("x-lanes-replica");
    }
    for (int i = 0; i < 6; ++i) {
        const auto r = chat(router->port(), i);
        REQUIRE(r.status == 200);
        INFO("prompt " << i);
        CHECK(r.header("x-lanes-replica") == placed[i]);
        CHECK(r.header("x-lanes-route-reason") == "prefix_match_precise");
    }
    const std::string m = get(router->port(), "/metrics").body;
    CHECK(m.find(R"(lanes_router_tokenize_total{outcome="fetched"} 6.0)") != std::string::npos);
    CHECK(m.find(R"(lanes_router_tokenize_total{outcome="cached"} 6.0)") != std::string::npos);

    // A tokenize endpoint that does not answer: requests go on, routed on their text.
    auto deaf = start_router("http://127.0.0.1:1");
    REQUIRE(wait_healthy(deaf->port(), 10s));
    REQUIRE(chat(deaf->port(), 0).status == 200);
    CHECK(get(deaf->port(), "/metrics")
              .body.find(R"(lanes_router_tokenize_total{outcome="failed"} 1.0)") !=
          std::string::npos);
}
