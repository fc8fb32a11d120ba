// The router in front of engines that are not lanes replicas (a scriptable fake vLLM): what it
// passes untouched, how it routes by model, relays an engine's headers and treats overload.
#include "fake_engine.hpp"
#include "traffic.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <csignal>
#include <set>

using namespace lanes;
using namespace lanes::test;
using namespace std::chrono_literals;
using verb = boost::beast::http::verb;
using nlohmann::json;

namespace {

std::set<std::string> router_models(unsigned short port) {
    std::set<std::string> out;
    const auto doc = json::parse(get(port, "/v1/models").body, nullptr, false);
    if (doc.is_object() && doc.contains("data"))
        for (const auto& m : doc["data"])
            out.insert(m.value("id", ""));
    return out;
}

// A router in front of `engines`, healthy, once it lists `models` (every engine's read).
std::unique_ptr<process> router_for(const std::vector<fake_engine*>& engines,
                                    const std::set<std::string>& models,
                                    std::vector<std::string> args = {}) {
    std::vector<std::string> all = {
        "--host", "127.0.0.1",    "--port", "0", "--health-interval", "50ms", "--models-interval",
        "100ms",  "--access-log", "false"};
    for (const auto* e : engines) {
        all.push_back("--replica");
        all.push_back(e->url());
    }
    all.insert(all.end(), args.begin(), args.end());
    auto r = std::make_unique<process>(LANES_ROUTER_BIN, all);
    REQUIRE(wait_healthy(r->port(), 10s));
    REQUIRE(eventually([&] { return router_models(r->port()) == models; }, 5s));
    return r;
}

std::string replica_of(const reply& r) {
    return r.header("x-lanes-replica");
}

} // namespace

TEST_CASE("drop-in: bodies vLLM accepts pass byte for byte", "[dropin]") {
    fake_engine engine({"llama"});
    auto router = router_for({&engine}, {"llama"});
    const std::vector<std::pair<std::string, std::string>> bodies = {
        {"/v1/completions", R"({"model":"llama","prompt":[128000,9906,11,1917,0],"max_tokens":4})"},
        {"/v1/completions", R"({"model":"llama","prompt":["first","second"],"n":2})"},
        {"/v1/completions", R"({"model":"llama","prompt":[[1,2,3],[128001,5]]})"},
        {"/v1/chat/completions",
         R"({"model":"llama","messages":[{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0KGgo="}}]}]})"},
        {"/v1/chat/completions",
         R"({"model":"llama","messages":[{"role":"user","content":"weather?"}],"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}],"tool_choice":"auto","response_format":{"type":"json_object"},"some_future_field":{"x":[1,2]}})"},
        {"/v1/chat/completions",
         R"({"model":"llama","messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"c","content":"42"}]})"},
    };
    for (const auto& [path, body] : bodies) {
        INFO(body);
        const auto r = post_json(router->port(), path, body);
        CHECK(r.status == 200);
        const auto got = engine.requests(path);
        REQUIRE(!got.empty());
        CHECK(got.back().body == body);
        CHECK(got.back().header("content-type") == "application/json");
    }
    // Refused at the router only when it cannot read a body one way.
    CHECK(post_json(router->port(), "/v1/completions", "{oops").status == 400);
    CHECK(post_json(router->port(), "/v1/completions",
                    R"({"model":"llama","model":"other","prompt":"x"})")
              .status == 400);
    CHECK(engine.requests().size() == bodies.size()); // neither reached the engine
}

TEST_CASE("drop-in: the rest of the API is forwarded, unknown paths are 404", "[dropin]") {
    fake_engine engine({"e5"});
    engine.set_script([](const fake_engine::received& r) {
        fake_engine::answer a;
        a.body = R"({"object":"list","path":")" + r.target + R"("})";
        return a;
    });
    auto router = router_for({&engine}, {"e5"});
    for (const std::string path :
         {"/v1/embeddings", "/tokenize", "/detokenize", "/v1/rerank", "/v1/score", "/pooling"}) {
        INFO(path);
        const std::string body = R"({"model":"e5","input":["a","b"],"prompt":"x"})";
        const auto r = post_json(router->port(), path, body);
        CHECK(r.status == 200);
        CHECK(json::parse(r.body)["path"] == path);
        CHECK(engine.requests(path).back().body == body);
        CHECK(replica_of(r) == engine.url());
    }
    // A multipart upload goes unread.
    const std::string multipart = "--b\r\nContent-Disposition: form-data; name=\"file\"; "
                                  "filename=\"a.wav\"\r\n\r\n\x01\x02\xff\r\n--b--\r\n";
    const auto audio = request(router->port(), verb::post, "/v1/audio/transcriptions", multipart,
                               {{"Content-Type", "multipart/form-data; boundary=b"}});
    CHECK(audio.status == 200);
    const auto uploads = engine.requests("/v1/audio/transcriptions");
    REQUIRE(uploads.size() == 1);
    CHECK(uploads[0].body == multipart);
    CHECK(get(router->port(), "/v1/nothing").status == 404);
    CHECK(json::parse(get(router->port(), "/v1/nothing").body)["error"]["code"] == 404);
}

TEST_CASE("drop-in: two models on three replicas are routed apart", "[dropin]") {
    fake_engine a({"small"}), b({"small"}), c({"big"});
    auto router = router_for({&a, &b, &c}, {"small", "big"}, {"--policy", "round_robin"});
    for (int i = 0; i < 12; ++i) {
        const auto big =
            post_json(router->port(), "/v1/completions", R"({"model":"big","prompt":"x"})");
        CHECK(replica_of(big) == c.url());
        const auto small =
            post_json(router->port(), "/v1/completions", R"({"model":"small","prompt":"y"})");
        CHECK(small.status == 200);
        CHECK(replica_of(small) != c.url());
    }
    CHECK(c.requests().size() == 12);
    CHECK(a.requests().size() + b.requests().size() == 12);
    // An unknown model is vLLM's 404 ...
    const auto unknown =
        post_json(router->port(), "/v1/completions", R"({"model":"huge","prompt":"z"})");
    CHECK(unknown.status == 404);
    CHECK(json::parse(unknown.body)["error"]["message"] == "The model `huge` does not exist.");
    // ... until a replica serves it: the router reads the lists again before answering 404.
    c.set_models({"big", "huge"});
    reply found;
    CHECK(eventually(
        [&] {
            found =
                post_json(router->port(), "/v1/completions", R"({"model":"huge","prompt":"z"})");
            return found.status == 200;
        },
        5s));
    CHECK(replica_of(found) == c.url());
    // The model is a label of the request counters.
    CHECK(get(router->port(), "/metrics").body.find("model=\"big\"") != std::string::npos);
}

TEST_CASE("drop-in: a model no replica lists is served but labelled unlisted", "[dropin]") {
    // An engine that lists no model serves any name; the names clients make up must not each
    // become a series of lanes_router_requests_total.
    fake_engine any(std::vector<std::string>{});
    auto router = router_for({&any}, {});
    for (int i = 0; i < 3; ++i) {
        const auto r =
            post_json(router->port(), "/v1/completions",
                      R"({"model":"made-up-)" + std::to_string(i) + R"(","prompt":"x"})");
        CHECK(r.status == 200);
    }
    REQUIRE(any.requests("/v1/completions").size() == 3);
    CHECK(any.requests("/v1/completions")[2].body.find("made-up-2") != std::string::npos);
    std::string m;
    CHECK(eventually(
        [&] {
            m = get(router->port(), "/metrics").body;
            return m.find("model=\"unlisted\"") != std::string::npos;
        },
        5s));
    CHECK(m.find("made-up") == std::string::npos);
}

TEST_CASE("drop-in: /v1/models right after start waits for the first model reads", "[dropin]") {
    fake_engine a({"llama"}), b({"qwen"});
    a.set_models_delay(400ms);
    b.set_models_delay(400ms);
    process router(LANES_ROUTER_BIN, {"--host", "127.0.0.1", "--port", "0", "--replica", a.url(),
                                      "--replica", b.url(), "--access-log", "false"});
    REQUIRE(wait_healthy(router.port(), 10s));
    // Asked before either read is back: the answer still lists both engines' models.
    CHECK(router_models(router.port()) == std::set<std::string>{"llama", "qwen"});
}

TEST_CASE("drop-in: the engine's own headers reach the client", "[dropin]") {
    fake_engine engine({"m"});
    engine.set_script([](const fake_engine::received& r) {
        fake_engine::answer a;
        a.headers = {{"x-ratelimit-remaining-requests", "7"},
                     {"x-engine-id", "e1"},
                     {"Connection", "X-Hop"},
                     {"X-Hop", "not relayed"}};
        if (r.body.find("stream") != std::string::npos)
            a.events = {R"({"choices":[{"text":"a"}]})"};
        return a;
    });
    auto router = router_for({&engine}, {"m"});
    const auto whole = post_json(router->port(), "/v1/completions", R"({"prompt":"x"})");
    CHECK(whole.header("x-ratelimit-remaining-requests") == "7");
    CHECK(whole.header("x-engine-id") == "e1");
    CHECK(whole.header("x-hop").empty());
    CHECK(whole.header("x-lanes-replica") == engine.url());
    const auto streamed =
        post_json(router->port(), "/v1/completions", R"({"prompt":"x","stream":true})");
    CHECK(streamed.header("x-engine-id") == "e1");
    CHECK(streamed.body.find("data: [DONE]") != std::string::npos);
}

TEST_CASE("drop-in: 503 is backpressure: never ejected, retried elsewhere, back after Retry-After",
          "[dropin]") {
    fake_engine busy({"m"}), calm({"m"});
    std::atomic<bool> overloaded{true};
    busy.set_script([&](const fake_engine::received&) {
        fake_engine::answer a;
        if (overloaded.load()) {
            a.status = 503;
            a.headers = {{"Retry-After", "1"}};
            a.body = R"({"error":{"message":"busy"}})";
        }
        return a;
    });
    auto router =
        router_for({&busy, &calm}, {"m"}, {"--policy", "round_robin", "--failure-threshold", "2"});
    for (int i = 0; i < 20; ++i) {
        const auto r = post_json(router->port(), "/v1/completions", R"({"prompt":"x"})");
        CHECK(r.status == 200);
        CHECK(replica_of(r) == calm.url());
    }
    // Twenty requests, and the first 503 kept `busy` out for its Retry-After: it saw one.
    CHECK(busy.requests().size() == 1);
    const auto list = json::parse(get(router->admin_port(), "/admin/replicas").body);
    for (const auto& r : list)
        CHECK(r["healthy"] == true); // never ejected
    // After its Retry-After it takes requests again.
    overloaded = false;
    CHECK(eventually(
        [&] {
            return replica_of(post_json(router->port(), "/v1/completions", R"({"prompt":"x"})")) ==
                   busy.url();
        },
        4s));
    CHECK(get(router->port(), "/metrics")
              .body.find("lanes_router_backpressure_total{replica=\"" + busy.url() + "\"} 1") !=
          std::string::npos);
}

TEST_CASE("drop-in: when every replica pushes back the client gets the largest Retry-After",
          "[dropin]") {
    fake_engine a({"m"}), b({"m"});
    a.set_script([](const fake_engine::received&) {
        return fake_engine::answer{429, "application/json", {{"Retry-After", "2"}}, "{}", {}};
    });
    b.set_script([](const fake_engine::received&) {
        return fake_engine::answer{503, "application/json", {{"Retry-After", "5"}}, "{}", {}};
    });
    auto router = router_for({&a, &b}, {"m"}, {"--policy", "round_robin"});
    const auto r = post_json(router->port(), "/v1/completions", R"({"prompt":"x"})");
    CHECK((r.status == 429 || r.status == 503));
    CHECK(r.header("retry-after") == "5");
    // Both back off now: the router answers at once, without asking them.
    const auto again = post_json(router->port(), "/v1/completions", R"({"prompt":"x"})");
    CHECK(again.status == 503);
    const int wait = std::stoi(again.header("retry-after"));
    CHECK(wait >= 4);
    CHECK(wait <= 5);
    CHECK(a.requests().size() + b.requests().size() == 2);
}

TEST_CASE("drop-in: failed requests eject at most half of a model's replicas", "[dropin]") {
    fake_engine a({"m"}), b({"m"});
    for (auto* e : {&a, &b})
        e->set_script([](const fake_engine::received&) {
            return fake_engine::answer{500, "application/json", {}, R"({"error":"boom"})", {}};
        });
    auto router = router_for({&a, &b}, {"m"},
                             {"--policy", "round_robin", "--failure-threshold", "1",
                              "--max-retries", "0", "--eject-time", "30s"});
    for (int i = 0; i < 6; ++i)
        CHECK(post_json(router->port(), "/v1/completions", R"({"prompt":"x"})").status == 500);
    // Both failed, but only one is out: the other stays routable (and keeps answering 500).
    const auto list = json::parse(get(router->admin_port(), "/admin/replicas").body);
    int healthy = 0;
    for (const auto& r : list)
        healthy += r["healthy"] == true ? 1 : 0;
    CHECK(healthy <= 1);
    CHECK(a.requests().size() + b.requests().size() == 6);
    CHECK(post_json(router->port(), "/v1/completions", R"({"prompt":"x"})").status == 500);
    // A replica whose probes fail is out regardless of the cap.
    a.set_health(500);
    b.set_health(500);
    CHECK(eventually(
        [&] {
            return post_json(router->port(), "/v1/completions", R"({"prompt":"x"})").status == 503;
        },
        5s));
}

TEST_CASE("drop-in: readiness follows the replicas' probes and turns 503 at SIGTERM", "[dropin]") {
    fake_engine engine({"m"});
    auto router = router_for({&engine}, {"m"}, {"--shutdown-delay", "1500ms"});
    CHECK(get(router->port(), "/readiness").status == 200);
    CHECK(get(router->port(), "/liveness").status == 200);
    engine.set_health(503);
    CHECK(eventually([&] { return get(router->port(), "/readiness").status == 503; }, 5s));
    CHECK(get(router->port(), "/health").status == 200); // liveness: the process serves
    engine.set_health(200);
    CHECK(eventually([&] { return get(router->port(), "/readiness").status == 200; }, 5s));
    router->signal(SIGTERM);
    CHECK(eventually([&] { return get(router->port(), "/readiness").status == 503; }, 1s));
    // Still serving during --shutdown-delay.
    CHECK(post_json(router->port(), "/v1/completions", R"({"prompt":"x"})").status == 200);
    CHECK(router->wait(10s) == 0);
}

TEST_CASE("drop-in: the replica key on scrapes, probes and model reads, and client keys passed",
          "[dropin]") {
    fake_engine engine({"m"});
    SECTION("the client's own key is forwarded") {
        auto router = router_for({&engine}, {"m"}, {"--replica-api-key", "rk"});
        post_json(router->port(), "/v1/completions", R"({"prompt":"x"})",
                  {{"Authorization", "Bearer client"}});
        post_json(router->port(), "/v1/completions", R"({"prompt":"x"})");
        CHECK(eventually([&] { return !engine.monitor_requests("/metrics").empty(); }, 5s));
        for (const char* path : {"/health", "/metrics", "/v1/models"})
            CHECK(engine.monitor_requests(path).back().header("authorization") == "Bearer rk");
        const auto got = engine.requests("/v1/completions");
        REQUIRE(got.size() == 2);
        CHECK(got[0].header("authorization") == "Bearer client");
        CHECK(got[1].header("authorization") == "Bearer rk"); // none of its own: the router's
    }
    SECTION("or replaced") {
        auto router = router_for({&engine}, {"m"},
                                 {"--replica-api-key", "rk", "--replace-client-auth", "true"});
        post_json(router->port(), "/v1/completions", R"({"prompt":"x"})",
                  {{"Authorization", "Bearer client"}});
        const auto got = engine.requests("/v1/completions");
        REQUIRE(got.size() == 1);
        CHECK(got[0].header("authorization") == "Bearer rk");
    }
}

TEST_CASE("drop-in: a responses continuation goes to the replica holding its state", "[dropin]") {
    fake_engine a({"m"}), b({"m"});
    for (auto* e : {&a, &b}) {
        const std::string name = e == &a ? "a" : "b";
        auto n = std::make_shared<std::atomic<int>>(0);
        e->set_script([name, n](const fake_engine::received&) {
            fake_engine::answer ans;
            ans.body = R"({"id":"resp_)" + name + std::to_string(n->fetch_add(1)) +
                       R"(","object":"response","output":[]})";
            return ans;
        });
    }
    auto router = router_for({&a, &b}, {"m"}, {"--policy", "round_robin"});
    const auto first = post_json(router->port(), "/v1/responses", R"({"input":"hi"})");
    REQUIRE(first.status == 200);
    const std::string id = json::parse(first.body)["id"];
    const std::string holder = replica_of(first);
    for (int i = 0; i < 6; ++i) {
        const auto next = post_json(router->port(), "/v1/responses",
                                    R"({"input":"more","previous_response_id":")" + id + R"("})");
        CHECK(replica_of(next) == holder);
        CHECK(next.header("x-lanes-route-reason") == "response_affinity");
    }
    const auto fetched = get(router->port(), "/v1/responses/" + id);
    CHECK(replica_of(fetched) == holder);
}

namespace {

// vLLM V1's gauges and counters as a scrape reads them; `queries` drops when the engine restarts.
std::string vllm_metrics(double queries) {
    return "vllm:num_requests_running{model_name=\"m\"} 0\n"
           "vllm:num_requests_waiting{model_name=\"m\"} 0\n"
           "vllm:kv_cache_usage_perc{model_name=\"m\"} 0.1\n"
           "vllm:prefix_cache_queries_total{model_name=\"m\"} " +
           std::to_string(queries) +
           "\n"
           "vllm:prefix_cache_hits_total{model_name=\"m\"} " +
           std::to_string(queries / 2) +
           "\n"
           "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"8192\"} 1\n";
}

} // namespace

TEST_CASE("drop-in: an engine that restarted loses its index entries", "[dropin]") {
    fake_engine a({"m"}), b({"m"});
    a.set_metrics(vllm_metrics(1000));
    b.set_metrics(vllm_metrics(1000));
    auto router = router_for({&a, &b}, {"m"}, {"--policy", "prefix", "--scrape-interval", "50ms"});
    const std::string body =
        R"({"model":"m","prompt":")" + std::string(2000, 'p') + R"(","max_tokens":1})";
    const auto first = post_json(router->port(), "/v1/completions", body);
    REQUIRE(first.status == 200);
    const auto again = post_json(router->port(), "/v1/completions", body);
    CHECK(again.header("x-lanes-route-reason") == "prefix_match");
    CHECK(replica_of(again) == replica_of(first));
    // The holder's counters drop: it restarted with an empty cache, so nothing it held is matched.
    fake_engine& holder = replica_of(first) == a.url() ? a : b;
    const auto scrapes = holder.monitor_requests("/metrics").size();
    holder.set_metrics(vllm_metrics(10));
    REQUIRE(
        eventually([&] { return holder.monitor_requests("/metrics").size() > scrapes + 1; }, 5s));
    const auto after = post_json(router->port(), "/v1/completions", body);
    CHECK(after.status == 200);
    CHECK(after.header("x-lanes-route-reason") != "prefix_match");
}

TEST_CASE("drop-in: a client that reads slowly does not hold its replica's place", "[dropin]") {
    // An answer larger than the sockets between router and client hold, to a client that reads
    // none of it: the router holds the whole answer and waits on the client, the replica is done.
    fake_engine engine({"m"});
    const std::string large(12 * 1024 * 1024, 'x'); // under --upstream-body-limit's 16 MiB
    engine.set_script([&large](const fake_engine::received& r) {
        fake_engine::answer ans;
        if (r.body.find("large") != std::string::npos)
            ans.body = R"({"id":"cmpl-l","object":"text_completion","choices":[{"text":")" + large +
                       R"("}]})";
        return ans;
    });
    auto router =
        router_for({&engine}, {"m"}, {"--replica-max-inflight", "1", "--queue-timeout", "3s"});
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket slow(io);
    slow.open(boost::asio::ip::tcp::v4());
    slow.set_option(boost::asio::socket_base::receive_buffer_size(4096));
    slow.connect({boost::asio::ip::make_address("127.0.0.1"), router->port()});
    const std::string body = R"({"model":"m","prompt":"large"})";
    boost::asio::write(slow, boost::asio::buffer("POST /v1/completions HTTP/1.1\r\nHost: x\r\n"
                                                 "Content-Type: application/json\r\n"
                                                 "Content-Length: " +
                                                 std::to_string(body.size()) + "\r\n\r\n" + body));
    const auto gauge = [&] {
        const auto scrape = common::prom::parse(get(router->port(), "/metrics").body);
        const auto* s = scrape.find("lanes_router_replica_inflight", {{"replica", engine.url()}});
        return s ? s->value : -1.0;
    };
    REQUIRE(eventually([&] { return engine.requests("/v1/completions").size() == 1; }, 5s));
    // Counted in flight no longer once the replica's answer is read, though the client has
    // taken almost none of it ...
    CHECK(eventually([&] { return gauge() == 0.0; }, 5s));
    // ... so the next request is let in at once (at --replica-max-inflight 1), not after the
    // slow client or the queue's timeout.
    const auto started = std::chrono::steady_clock::now();
    const auto next = post_json(router->port(), "/v1/completions", R"({"prompt":"small"})");
    CHECK(next.status == 200);
    CHECK(std::chrono::steady_clock::now() - started < 2s);
    CHECK(engine.requests("/v1/completions").size() == 2);
}
