// Access control through the real router: API keys (none, wrong, right, reloaded on SIGHUP), what
// needs one, what reaches the engine of a client's credentials, and the per-key accounting.
#include "fake_engine.hpp"
#include "traffic.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <csignal>
#include <cstdio>
#include <fstream>

#include <unistd.h>

using namespace lanes;
using namespace lanes::test;
using namespace std::chrono_literals;
using verb = boost::beast::http::verb;
using nlohmann::json;

namespace {

const std::string body = R"({"model":"m","prompt":"hello","max_tokens":2})";

common::http::header_list bearer(const std::string& key) {
    return {{"Authorization", "Bearer " + key}};
}

// A temporary file with `text`, removed with the object.
struct temp_file {
    explicit temp_file(const std::string& text) {
        path = "/tmp/lanes-access-" + std::to_string(::getpid()) + "-" +
               std::to_string(reinterpret_cast<std::uintptr_t>(this) % 100000);
        write(text);
    }
    ~temp_file() { std::remove(path.c_str()); }
    void write(const std::string& text) const { std::ofstream(path) << text; }
    std::string path;
};

// A router in front of `engine` with `args`, healthy and knowing the engine's model.
std::unique_ptr<process> keyed_router(fake_engine& engine, std::vector<std::string> args,
                                      const std::string& key) {
    std::vector<std::string> all = {"--host",
                                    "127.0.0.1",
                                    "--port",
                                    "0",
                                    "--replica",
                                    engine.url(),
                                    "--health-interval",
                                    "50ms",
                                    "--models-interval",
                                    "100ms"};
    all.insert(all.end(), args.begin(), args.end());
    auto r = std::make_unique<process>(LANES_ROUTER_BIN, all);
    REQUIRE(wait_healthy(r->port(), 10s));
    REQUIRE(eventually(
        [&] { return post_json(r->port(), "/v1/completions", body, bearer(key)).status == 200; },
        5s));
    return r;
}

double metric(unsigned short port, const std::string& line_start, const std::string& key) {
    const std::string text = request(port, verb::get, "/metrics", "",
                                     key.empty() ? common::http::header_list{} : bearer(key))
                                 .body;
    const auto at = text.find("\n" + line_start + " ");
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + line_start.size() + 2));
}

} // namespace

TEST_CASE("API keys: missing or wrong is 401 invalid_api_key, right is served as its name",
          "[access]") {
    fake_engine engine({"m"});
    temp_file keys("sk-team-a team-a\nsk-team-b team-b\n");
    auto router = keyed_router(engine, {"--api-key-file", keys.path}, "sk-team-a");
    const auto port = router->port();
    CHECK(router->log().find("no API keys") == std::string::npos);

    for (const auto& headers :
         {common::http::header_list{}, bearer("sk-team-c"),
          common::http::header_list{{"Authorization", "sk-team-a"}},
          common::http::header_list{{"Authorization", "Basic c2stdGVhbS1h"}}}) {
        const auto r = post_json(port, "/v1/completions", body, headers);
        CHECK(r.status == 401);
        const auto doc = json::parse(r.body);
        CHECK(doc["error"]["code"] == "invalid_api_key");
        CHECK(doc["error"]["type"] == "AuthenticationError");
        CHECK(r.header("www-authenticate") == "Bearer");
    }
    // Every path past the probes needs the key: models, the forwarded API, unknown paths.
    CHECK(get(port, "/v1/models").status == 401);
    CHECK(post_json(port, "/v1/embeddings", R"({"model":"m","input":"x"})").status == 401);
    CHECK(get(port, "/v2/nothing").status == 401);
    CHECK(request(port, verb::get, "/v2/nothing", "", bearer("sk-team-a")).status == 404);
    // Probes need none; the metrics do.
    CHECK(get(port, "/health").status == 200);
    CHECK(get(port, "/readiness").status == 200);
    CHECK(get(port, "/metrics").status == 401);
    CHECK(request(port, verb::get, "/metrics", "", bearer("sk-team-b")).status == 200);

    const std::size_t before = engine.requests("/v1/completions").size();
    const auto ok = post_json(port, "/v1/completions", body, bearer("sk-team-b"));
    CHECK(ok.status == 200);
    const auto got = engine.requests("/v1/completions");
    REQUIRE(got.size() == before + 1);
    // The client's key is the router's business: it never reaches the engine.
    CHECK(got.back().header("authorization").empty());
    // Counted just after the answer's last byte, so it may trail the client: wait, then check.
    const std::string served = "lanes_router_api_key_requests_total{code=\"200\",key=\"team-b\"}";
    eventually([&] { return metric(port, served, "sk-team-a") >= 1.0; }, 5s);
    CHECK(metric(port, served, "sk-team-a") >= 1.0);
    CHECK(metric(port, "lanes_router_access_refusals_total{reason=\"invalid_api_key\"}",
                 "sk-team-a") >= 4.0);
}

TEST_CASE("API keys: the replica key goes upstream instead, and LANES_API_KEYS works too",
          "[access]") {
    fake_engine engine({"m"});
    ::setenv("LANES_API_KEYS", "sk-env-1 from-env,sk-env-2", 1);
    auto router = keyed_router(
        engine, {"--replica-api-key", "rk", "--metrics-public", "--access-log", "true"},
        "sk-env-1");
    ::unsetenv("LANES_API_KEYS");
    const auto port = router->port();
    CHECK(post_json(port, "/v1/completions", body, bearer("sk-env-2")).status == 200);
    CHECK(engine.requests("/v1/completions").back().header("authorization") == "Bearer rk");
    CHECK(get(port, "/metrics").status == 200); // --metrics-public
    CHECK(post_json(port, "/v1/completions", body).status == 401);
    // The access log names the key, and holds no key.
    CHECK(eventually([&] { return router->log().find("key=from-env") != std::string::npos; }, 5s));
    CHECK(router->log().find("sk-env") == std::string::npos);
}

TEST_CASE("API keys: SIGHUP re-reads the file, a broken file keeps the keys in force", "[access]") {
    fake_engine engine({"m"});
    temp_file keys("sk-old old\n");
    auto router = keyed_router(engine, {"--api-key-file", keys.path}, "sk-old");
    const auto port = router->port();
    keys.write("sk-new new\n");
    router->signal(SIGHUP);
    const bool reloaded = eventually(
        [&] { return post_json(port, "/v1/completions", body, bearer("sk-new")).status == 200; },
        5s);
    CHECK(reloaded);
    if (!reloaded) // what the router said (it once stopped answering here under TSan)
        WARN("router log:\n" << router->log());
    CHECK(post_json(port, "/v1/completions", body, bearer("sk-old")).status == 401);
    keys.write("sk-newer bad/name\n");
    router->signal(SIGHUP);
    CHECK(eventually(
        [&] { return router->log().find("API keys not reloaded") != std::string::npos; }, 5s));
    CHECK(post_json(port, "/v1/completions", body, bearer("sk-new")).status == 200);
    CHECK(router->log().find("sk-newer") == std::string::npos);
}

TEST_CASE("without keys the router is open and says so once", "[access]") {
    fake_engine engine({"m"});
    auto router = keyed_router(engine, {}, "anything");
    const std::string log = router->log();
    const auto at = log.find("no API keys");
    REQUIRE(at != std::string::npos);
    CHECK(log.find("no API keys", at + 1) == std::string::npos);
    // The client's own Authorization is the engine's to judge, as before.
    CHECK(post_json(router->port(), "/v1/completions", body, bearer("client-key")).status == 200);
    CHECK(engine.requests("/v1/completions").back().header("authorization") == "Bearer client-key");
}

TEST_CASE("rate limits: a key's request bucket, 429 with Retry-After and x-ratelimit-* headers",
          "[access]") {
    fake_engine engine({"m"});
    temp_file keys("sk-slow slow rps=1 burst=2\nsk-fast fast\nsk-tok tok tpm=100\n");
    auto router =
        keyed_router(engine, {"--api-key-file", keys.path, "--rate-limit-rps", "1000"}, "sk-fast");
    const auto port = router->port();
    CHECK(post_json(port, "/v1/completions", body, bearer("sk-slow")).status == 200);
    CHECK(post_json(port, "/v1/completions", body, bearer("sk-slow")).status == 200);
    const std::size_t reached = engine.requests("/v1/completions").size();
    const auto over = post_json(port, "/v1/completions", body, bearer("sk-slow"));
    REQUIRE(over.status == 429);
    CHECK(over.header("retry-after") == "1");
    CHECK(over.header("x-ratelimit-limit-requests") == "2");
    CHECK(over.header("x-ratelimit-remaining-requests") == "0");
    CHECK(over.header("x-ratelimit-reset-requests").ends_with("s"));
    const auto doc = json::parse(over.body);
    CHECK(doc["error"]["code"] == "rate_limit_exceeded");
    CHECK(doc["error"]["type"] == "RateLimitError");
    CHECK(
        doc["error"]["message"].get<std::string>().starts_with("Rate limit reached for requests"));
    CHECK(!over.header("x-request-id").empty());                 // refusals are traceable too
    CHECK(engine.requests("/v1/completions").size() == reached); // never reached the engine
    // Another key is not held back by it.
    for (int i = 0; i < 5; ++i)
        CHECK(post_json(port, "/v1/completions", body, bearer("sk-fast")).status == 200);
    // A second later the slow key has one request again.
    std::this_thread::sleep_for(1100ms);
    CHECK(post_json(port, "/v1/completions", body, bearer("sk-slow")).status == 200);

    // Tokens: the prompt's plus max_tokens, against the key's tpm.
    const std::string big = R"({"model":"m","prompt":"hello","max_tokens":90})";
    CHECK(post_json(port, "/v1/completions", big, bearer("sk-tok")).status == 200);
    const auto tokens = post_json(port, "/v1/completions", big, bearer("sk-tok"));
    REQUIRE(tokens.status == 429);
    CHECK(json::parse(tokens.body)["error"]["type"] == "RateLimitError");
    CHECK(json::parse(tokens.body)["error"]["message"].get<std::string>().starts_with(
        "Rate limit reached for tokens"));
    CHECK(tokens.header("x-ratelimit-limit-tokens") == "100");
    CHECK(std::stoi(tokens.header("retry-after")) >= 40); // ~90 tokens at 100 a minute
    CHECK(metric(port, "lanes_router_access_refusals_total{reason=\"rate_limit_tokens\"}",
                 "sk-fast") == 1.0);
}

TEST_CASE("rate limits without keys count client addresses, X-Forwarded-For from trusted peers",
          "[access]") {
    fake_engine engine({"m"});
    auto router = keyed_router(
        engine,
        {"--rate-limit-rps", "0.5", "--rate-limit-burst", "1", "--trusted-proxies", "127.0.0.0/8"},
        "");
    const auto port = router->port();
    const common::http::header_list one = {{"X-Forwarded-For", "198.51.100.1"}};
    const common::http::header_list two = {{"X-Forwarded-For", "6.6.6.6, 198.51.100.2"}};
    CHECK(post_json(port, "/v1/completions", body, one).status == 200);
    CHECK(post_json(port, "/v1/completions", body, one).status == 429);
    CHECK(post_json(port, "/v1/completions", body, two).status == 200);
    CHECK(post_json(port, "/v1/completions", body, two).status == 429);
    // The forged first hop is not who counts: the same proxy-reported client is still limited.
    CHECK(post_json(port, "/v1/completions", body, {{"X-Forwarded-For", "7.7.7.7, 198.51.100.2"}})
              .status == 429);
    // A proxy that adds its own field after the client's: the fields are one list, so the
    // client's forged field comes first and the proxy's last, and a fresh forged address each
    // time is no way round the limit.
    CHECK(post_json(port, "/v1/completions", body,
                    {{"X-Forwarded-For", "8.8.8.8"}, {"X-Forwarded-For", "198.51.100.2"}})
              .status == 429);
    CHECK(post_json(port, "/v1/completions", body,
                    {{"X-Forwarded-For", "9.9.9.9"}, {"X-Forwarded-For", "198.51.100.2"}})
              .status == 429);
}

TEST_CASE("route headers off keep the fleet's layout from clients", "[access]") {
    fake_engine engine({"m"});
    auto shown = keyed_router(engine, {}, "");
    const auto a = post_json(shown->port(), "/v1/completions", body);
    CHECK(a.header("x-lanes-replica") == engine.url());
    CHECK_FALSE(a.header("x-lanes-route-reason").empty());
    auto hidden = keyed_router(engine, {"--route-headers", "false"}, "");
    for (const bool stream : {false, true}) {
        const auto r = post_json(hidden->port(), "/v1/completions",
                                 stream ? R"({"model":"m","prompt":"s","stream":true})" : body);
        CHECK(r.status == 200);
        CHECK(r.header("x-lanes-replica").empty());
        CHECK(r.header("x-lanes-route-reason").empty());
        CHECK_FALSE(r.header("x-request-id").empty());
    }
}

TEST_CASE("cache isolation by key: a salt per key upstream, cached prefixes not shared",
          "[access]") {
    temp_file keys("sk-a tenant-a\nsk-b tenant-b\n");
    // What reaches an engine: each key's requests carry their own salt; a client's is refused.
    {
        fake_engine engine({"m"});
        auto router =
            keyed_router(engine, {"--api-key-file", keys.path, "--isolate-cache-by-key"}, "sk-a");
        const auto port = router->port();
        CHECK(post_json(port, "/v1/completions", body, bearer("sk-b")).status == 200);
        const auto a = json::parse(engine.requests("/v1/completions").front().body);
        const auto b = json::parse(engine.requests("/v1/completions").back().body);
        REQUIRE(a.contains("cache_salt"));
        REQUIRE(b.contains("cache_salt"));
        CHECK(a["cache_salt"] != b["cache_salt"]);
        CHECK(a["prompt"] == "hello"); // nothing else changed
        const auto own =
            post_json(port, "/v1/completions", R"({"model":"m","prompt":"x","cache_salt":"mine"})",
                      bearer("sk-a"));
        CHECK(own.status == 400);
        CHECK(json::parse(own.body)["error"]["param"] == "cache_salt");
    }
    // A lanes replica honours the salt: the same prompt hits for its own key only.
    test::process replica(LANES_REPLICA_BIN, {"--port", "0", "--backend", "sim"});
    REQUIRE(wait_healthy(replica.port(), 10s));
    test::process router(LANES_ROUTER_BIN,
                         {"--host", "127.0.0.1", "--port", "0", "--replica", replica.url(),
                          "--api-key-file", keys.path, "--isolate-cache-by-key"});
    REQUIRE(wait_healthy(router.port(), 10s));
    const std::string prompt = R"({"prompt":")" + std::string(600, 'p') + R"(","max_tokens":1})";
    const auto cached = [&](const std::string& key) {
        const auto r = post_json(router.port(), "/v1/completions", prompt, bearer(key));
        REQUIRE(r.status == 200);
        const auto usage = json::parse(r.body)["usage"];
        return usage.contains("prompt_tokens_details")
                   ? usage["prompt_tokens_details"]["cached_tokens"].get<int>()
                   : 0;
    };
    CHECK(cached("sk-a") == 0);
    CHECK(cached("sk-a") > 500); // its own prefix
    CHECK(cached("sk-b") == 0);  // the other tenant's is not shared
    CHECK(cached("sk-b") > 500);
}

namespace {

// Sends a request head announcing `length` body bytes (no body) and reads what comes back within
// `wait`: the answer a router gives before any body byte, or "" when it waits for the body.
std::string head_only(unsigned short port, const std::string& extra_fields, std::size_t length,
                      std::chrono::milliseconds wait) {
    boost::asio::io_context io;
    boost::asio::ip::tcp::socket s(io);
    s.connect({boost::asio::ip::make_address("127.0.0.1"), port});
    const std::string head = "POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                             "Content-Type: application/json\r\nContent-Length: " +
                             std::to_string(length) + "\r\n" + extra_fields + "\r\n";
    boost::asio::write(s, boost::asio::buffer(head));
    std::string got;
    char buf[4096];
    const auto until = std::chrono::steady_clock::now() + wait;
    s.non_blocking(true);
    while (std::chrono::steady_clock::now() < until) {
        boost::system::error_code ec;
        const std::size_t n = s.read_some(boost::asio::buffer(buf), ec);
        if (ec == boost::asio::error::would_block) {
            std::this_thread::sleep_for(10ms);
            continue;
        }
        if (ec)
            break;
        got.append(buf, n);
        if (got.find("\r\n\r\n") != std::string::npos && !got.starts_with("HTTP/1.1 100"))
            break;
    }
    return got;
}

} // namespace

TEST_CASE("API keys and rate limits are checked on the header, before the body is read",
          "[access]") {
    fake_engine engine({"m"});
    temp_file keys("sk-team-a team-a rps=1 burst=1\n");
    auto router = keyed_router(engine, {"--api-key-file", keys.path}, "sk-team-a");
    const auto port = router->port();
    // No key: the 401 comes at once, without the 8 MB body, and without a 100 Continue.
    const std::string stranger = head_only(port, "Expect: 100-continue\r\n", 8'000'000, 3s);
    CHECK(stranger.starts_with("HTTP/1.1 401"));
    CHECK(stranger.find("100 Continue") == std::string::npos);
    CHECK(stranger.find("invalid_api_key") != std::string::npos);
    CHECK(head_only(port, "Authorization: Bearer wrong\r\n", 8'000'000, 3s)
              .starts_with("HTTP/1.1 401"));
    // Its bucket spent (burst 1, the keyed_router's request took it), the key's next request is a
    // 429 on its header alone.
    const std::string limited =
        head_only(port, "Authorization: Bearer sk-team-a\r\n", 8'000'000, 3s);
    CHECK(limited.starts_with("HTTP/1.1 429"));
    std::string lower = limited;
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    CHECK(lower.find("retry-after:") != std::string::npos);
    // With room in its bucket the key's request gets its 100 Continue and nothing else yet.
    std::this_thread::sleep_for(1100ms);
    const std::string invited =
        head_only(port, "Authorization: Bearer sk-team-a\r\nExpect: 100-continue\r\n", 1000, 1s);
    CHECK(invited.starts_with("HTTP/1.1 100 Continue"));
    CHECK(invited.find("HTTP/1.1 4") == std::string::npos);
}
