// The router with real replica processes: the routing effect on a shared-prefix workload,
// prediction against the replicas' own counters, failover, drain and the admin API.
#include "harness.hpp"

#include "common/metrics/prom_parser.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <array>
#include <atomic>
#include <csignal>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <sstream>
#include <thread>

using namespace lanes;
using namespace std::chrono_literals;
using verb = boost::beast::http::verb;

namespace {

// Shared-prefix workload: `groups` system prompts of `system_len` bytes, `per_group` questions
// each, shuffled with a fixed seed.
std::vector<std::string> shared_prefix_prompts(int groups, int per_group, int system_len,
                                               int question_len) {
    std::mt19937 rng(7);
    std::vector<std::string> prompts;
    for (int g = 0; g < groups; ++g) {
        std::string system(static_cast<std::size_t>(system_len), ' ');
        for (auto& c : system)
            c = static_cast<char>('a' + rng() % 26);
        for (int q = 0; q < per_group; ++q) {
            std::string question(static_cast<std::size_t>(question_len), ' ');
            for (auto& c : question)
                c = static_cast<char>('A' + rng() % 26);
            prompts.push_back(system + question);
        }
    }
    std::shuffle(prompts.begin(), prompts.end(), rng);
    return prompts;
}

struct run_stats {
    std::map<std::string, int> per_replica;
    int ok = 0;
    int failed = 0;
    std::string first_failure;
    std::map<std::string, int> errors;
};

// Sends every prompt through the router with `concurrency` client threads.
run_stats send_all(unsigned short port, const std::vector<std::string>& prompts, int concurrency,
                   int max_tokens = 2) {
    run_stats stats;
    std::mutex mutex;
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> clients;
    for (int c = 0; c < concurrency; ++c)
        clients.emplace_back([&] {
            for (std::size_t i; (i = next++) < prompts.size();) {
                const nlohmann::json body = {
                    {"prompt", prompts[i]}, {"max_tokens", max_tokens}, {"ignore_eos", true}};
                const auto r = test::post_json(port, "/v1/completions", body.dump());
                std::lock_guard lock(mutex);
                if (r.status == 200) {
                    ++stats.ok;
                    ++stats.per_replica[r.header("x-lanes-replica")];
                } else {
                    if (stats.failed++ == 0)
                        stats.first_failure =
                            std::to_string(r.status) + " " + r.error + " " + r.body;
                    stats.errors[std::to_string(r.status) + " " + r.error]++;
                }
            }
        });
    for (auto& t : clients)
        t.join();
    return stats;
}

double fleet_counter(unsigned short router_port, const std::string& name) {
    const auto parsed = common::prom::parse(test::get(router_port, "/metrics").body);
    return parsed.sum(name).value_or(0.0);
}

double imbalance(const run_stats& s, int replicas) {
    double max = 0, total = 0;
    for (const auto& [r, n] : s.per_replica) {
        max = std::max(max, static_cast<double>(n));
        total += n;
    }
    return max / (total / replicas);
}

template <class Pred>
bool eventually(Pred pred, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (pred())
            return true;
        std::this_thread::sleep_for(5ms);
    }
    return false;
}

// Hit rate measured by the replicas themselves, as mirrored by the router's scrapes.
double fleet_hit_rate(const test::fleet& f) {
    // Wait until the router's mirror has caught up with every replica's own counters.
    double replica_queries = 0;
    for (const auto& r : f.replicas) {
        const auto p = common::prom::parse(test::get(r->port(), "/metrics").body);
        replica_queries += p.sum("vllm:prefix_cache_queries_total").value_or(0);
    }
    REQUIRE(eventually(
        [&] {
            return fleet_counter(f.router->port(),
                                 "lanes_router_replica_prefix_cache_queries_total") ==
                   replica_queries;
        },
        5s));
    return fleet_counter(f.router->port(), "lanes_router_replica_prefix_cache_hits_total") /
           replica_queries;
}

const std::vector<std::string> sim_replica = {"--backend", "sim",         "--sim-speedup",
                                              "20",        "--kv-blocks", "160"};

} // namespace

TEST_CASE("prefix routing beats round-robin's fleet hit rate 3x with balanced load",
          "[router][routing]") {
    // 16 groups of 512-byte system prompts (32 blocks each); every replica holds ~5 groups.
    const auto prompts = shared_prefix_prompts(16, 16, 512, 24);
    double rr_rate = 0, prefix_rate = 0;
    {
        test::fleet f(4, sim_replica, {"--policy", "round_robin"});
        const auto s = send_all(f.router->port(), prompts, 4);
        INFO(s.first_failure);
        INFO(nlohmann::json(s.errors).dump());
        REQUIRE(s.failed == 0);
        rr_rate = fleet_hit_rate(f);
    }
    {
        test::fleet f(4, sim_replica, {"--policy", "prefix"});
        const auto s = send_all(f.router->port(), prompts, 4);
        INFO(s.first_failure);
        INFO(nlohmann::json(s.errors).dump());
        REQUIRE(s.failed == 0);
        prefix_rate = fleet_hit_rate(f);
        INFO("per-replica requests: " << nlohmann::json(s.per_replica).dump());
        CHECK(imbalance(s, 4) <= 1.25);
        // The router's prediction against what the replicas counted, within 5%.
        const double predicted =
            fleet_counter(f.router->port(), "lanes_router_predicted_prefix_hit_tokens_total");
        const double counted =
            fleet_counter(f.router->port(), "lanes_router_replica_prefix_cache_hits_total");
        INFO("predicted " << predicted << " counted " << counted);
        CHECK(std::abs(predicted - counted) <= 0.05 * counted);
    }
    INFO("round_robin hit rate " << rr_rate << ", prefix " << prefix_rate);
    CHECK(prefix_rate >= 3.0 * rr_rate);
}

TEST_CASE("a replica killed mid-run: requests succeed elsewhere, it is ejected within 1 s",
          "[router][failover]") {
    // Slow sim replicas so requests are in flight when one dies.
    test::fleet f(4, {"--backend", "sim", "--sim-speedup", "2"}, {"--policy", "round_robin"});
    const auto prompts = shared_prefix_prompts(8, 16, 64, 16);
    run_stats stats;
    std::thread load([&] { stats = send_all(f.router->port(), prompts, 8, 16); });
    std::this_thread::sleep_for(300ms);
    const std::string victim = f.replicas[1]->url();
    f.replicas[1]->signal(SIGKILL);
    const auto killed_at = std::chrono::steady_clock::now();
    const bool ejected = eventually(
        [&] {
            const auto list =
                nlohmann::json::parse(test::get(f.router->port(), "/admin/replicas").body);
            for (const auto& r : list)
                if (r["url"] == victim)
                    return r["healthy"] == false;
            return false;
        },
        2s);
    const auto ejected_after = std::chrono::steady_clock::now() - killed_at;
    load.join();
    CHECK(ejected);
    CHECK(ejected_after <= 1s);
    CHECK(stats.failed == 0); // non-streamed: nothing reached a client before the failure
    CHECK(stats.ok == static_cast<int>(prompts.size()));
    // A clean exit with pooled upstream connections still open (a crash here once).
    f.router->signal(SIGTERM);
    CHECK(f.router->wait(10s) == 0);
}

TEST_CASE("drain lets in-flight requests finish and sends no new work", "[router][admin]") {
    test::fleet f(2, {"--backend", "sim", "--sim-speedup", "2"}, {"--policy", "round_robin"});
    const auto port = f.router->port();
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
            for (const auto& r : nlohmann::json::parse(test::get(port, "/admin/replicas").body))
                busy += r["inflight"].get<int>();
            return busy == 2;
        },
        5s));
    const auto d =
        test::post_json(port, "/admin/replicas/drain", nlohmann::json{{"url", drained}}.dump());
    REQUIRE(d.status == 200);
    for (int i = 0; i < 10; ++i) {
        const auto r = test::post_json(port, "/v1/completions", R"({"prompt":"x","max_tokens":1})");
        CHECK(r.status == 200);
        CHECK(r.header("x-lanes-replica") != drained);
    }
    for (auto& t : inflight)
        t.join();
    CHECK(ok == 2); // the drained replica finished its in-flight request
    const auto list = nlohmann::json::parse(test::get(port, "/admin/replicas").body);
    for (const auto& r : list)
        if (r["url"] == drained)
            CHECK(r["draining"] == true);
}

TEST_CASE("admin API: list, add, remove, SGLang paths, auth", "[router][admin]") {
    test::fleet f(1, {"--backend", "sim", "--sim-speedup", "20"}, {"--admin-token", "s3cret"});
    const auto port = f.router->port();
    const test::reply no_token = test::get(port, "/admin/replicas");
    CHECK(no_token.status == 401);
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
    CHECK(test::get(port, "/metrics").body.find(up_line) != std::string::npos);
    CHECK(call(verb::delete_, "/admin/replicas?url=" + extra.url()).status == 200);
    CHECK(test::get(port, "/metrics").body.find(up_line) == std::string::npos); // gone with it
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

TEST_CASE("no routable replica: 503 with Retry-After", "[router][failover]") {
    test::fleet f(1, {"--backend", "sim"}, {});
    const auto port = f.router->port();
    REQUIRE(test::post_json(port, "/admin/replicas/drain",
                            nlohmann::json{{"url", f.replicas[0]->url()}}.dump())
                .status == 200);
    const auto r = test::post_json(port, "/v1/completions", R"({"prompt":"x"})");
    CHECK(r.status == 503);
    CHECK(r.header("retry-after") == "1");
    CHECK(nlohmann::json::parse(r.body)["error"]["code"] == 503);
}

TEST_CASE("DNS discovery: --replica-dns turns a resolved name into replicas", "[router][dns]") {
    test::process replica(LANES_REPLICA_BIN, {"--port", "0", "--backend", "sim"});
    REQUIRE(test::wait_healthy(replica.port(), 10s));
    test::process router(LANES_ROUTER_BIN, {"--host", "127.0.0.1", "--port", "0", "--replica-dns",
                                            "localhost:" + std::to_string(replica.port()),
                                            "--dns-interval", "100ms"});
    REQUIRE(test::wait_healthy(router.port(), 10s));
    const std::string expected = "http://127.0.0.1:" + std::to_string(replica.port());
    CHECK(eventually(
        [&] {
            for (const auto& r :
                 nlohmann::json::parse(test::get(router.port(), "/admin/replicas").body))
                if (r["url"] == expected &&
                    r["source"] == "localhost:" + std::to_string(replica.port()))
                    return true;
            return false;
        },
        5s));
    CHECK(test::post_json(router.port(), "/v1/completions", R"({"prompt":"dns","max_tokens":2})")
              .status == 200);
    // Its next resolution would add it again: removing it is refused, draining is the way.
    CHECK(test::request(router.port(), verb::delete_, "/admin/replicas?url=" + expected).status ==
          409);
    CHECK(test::post_json(router.port(), "/admin/replicas/drain",
                          nlohmann::json{{"url", expected}}.dump())
              .status == 200);
}

TEST_CASE("a client that leaves before its answer: the replica aborts, no retry, code 499",
          "[router][failover]") {
    const bool stream = GENERATE(false, true);
    INFO((stream ? "streamed" : "whole answer"));
    test::fleet f(2, {"--backend", "sim", "--sim-speedup", "0.2"}, {"--policy", "round_robin"});
    const auto port = f.router->port();
    auto sum_over_replicas = [&](const std::string& name) {
        double total = 0;
        for (const auto& r : f.replicas)
            total +=
                common::prom::parse(test::get(r->port(), "/metrics").body).sum(name).value_or(0);
        return total;
    };
    {
        boost::asio::io_context io;
        boost::asio::ip::tcp::socket s(io);
        s.connect({boost::asio::ip::make_address("127.0.0.1"), port});
        const std::string body = std::string(R"({"prompt":"long story","max_tokens":2000,)") +
                                 (stream ? R"("stream":true,)" : "") + R"("ignore_eos":true})";
        const std::string req = "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Type: "
                                "application/json\r\nContent-Length: " +
                                std::to_string(body.size()) + "\r\n\r\n" + body;
        boost::asio::write(s, boost::asio::buffer(req));
        REQUIRE(
            eventually([&] { return sum_over_replicas("vllm:num_requests_running") == 1.0; }, 10s));
    } // the client leaves without waiting for the rest of the answer
    const auto router_metrics = [&] {
        return common::prom::parse(test::get(port, "/metrics").body);
    };
    CHECK(eventually(
        [&] {
            const auto p = router_metrics();
            const auto* s = p.find("lanes_router_requests_total", {{"code", "499"}});
            return s && s->value == 1.0;
        },
        10s));
    // The replica that had it aborted it, and no other replica was asked (no retry).
    CHECK(eventually(
        [&] {
            return sum_over_replicas("vllm:num_requests_running") == 0.0 &&
                   sum_over_replicas("vllm:request_success_total") == 1.0;
        },
        10s));
    CHECK(router_metrics().sum("lanes_router_retries_total").value_or(0) == 0.0);
    // A client that left is no broken stream.
    const auto m = router_metrics();
    const auto* broken = m.find("lanes_router_errors_total", {{"kind", "stream_broken"}});
    CHECK((!broken || broken->value == 0.0));
}

// A hand-written backend on loopback: each accepted connection is served by `serve` on a thread
// of its own until the destructor stops the accept loop and joins them. `serve` should return
// once `stopping` is set or its socket fails.
class raw_backend {
public:
    using socket_ptr = std::shared_ptr<boost::asio::ip::tcp::socket>;
    using serve_fn = std::function<void(socket_ptr, const std::atomic<bool>& stopping)>;

    explicit raw_backend(serve_fn serve)
        : acceptor_(io_, {boost::asio::ip::make_address("127.0.0.1"), 0}) {
        accepting_ = std::thread([this, serve = std::move(serve)] {
            while (!stop_.load()) {
                auto s = std::make_shared<boost::asio::ip::tcp::socket>(io_);
                boost::system::error_code ec;
                acceptor_.accept(*s, ec);
                if (ec || stop_.load())
                    break;
                std::lock_guard lock(mutex_);
                served_.emplace_back([s, serve, this] { serve(s, stop_); });
            }
        });
    }
    ~raw_backend() {
        stop_ = true;
        boost::system::error_code ec;
        boost::asio::ip::tcp::socket poke(io_); // wakes the accept
        poke.connect(acceptor_.local_endpoint(), ec);
        accepting_.join();
        poke.close(ec);
        std::lock_guard lock(mutex_);
        for (auto& t : served_)
            t.join();
    }
    std::string url() const {
        return "http://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port());
    }
    // A connection that reads small requests, one per read, and writes `answer(request)` for
    // each (nothing when it is empty) until the router closes it.
    static serve_fn answering(std::function<std::string(std::string_view request)> answer) {
        return [answer = std::move(answer)](socket_ptr s, const std::atomic<bool>& stopping) {
            char buf[8192];
            boost::system::error_code ec;
            while (!stopping.load()) {
                const std::size_t n = s->read_some(boost::asio::buffer(buf), ec);
                if (ec)
                    return;
                if (const std::string out = answer(std::string_view(buf, n)); !out.empty())
                    boost::asio::write(*s, boost::asio::buffer(out), ec);
            }
        };
    }

private:
    boost::asio::io_context io_;
    boost::asio::ip::tcp::acceptor acceptor_;
    std::atomic<bool> stop_{false};
    std::mutex mutex_;
    std::vector<std::thread> served_;
    std::thread accepting_;
};

TEST_CASE("a pool of connections the replica closed while idle: each request still answered",
          "[router][failover]") {
    // A backend that answers every request as if keeping the connection, then closes it: each
    // connection the router pools is closed by the time it is used again (as a replica's
    // keep-alive timeout does after a lull), so a request may meet several in a row.
    raw_backend backend([](raw_backend::socket_ptr s, const std::atomic<bool>&) {
        namespace asio = boost::asio;
        char buf[8192];
        boost::system::error_code rec;
        const std::size_t n = s->read_some(asio::buffer(buf), rec); // one small request
        if (rec)
            return;
        const std::string body = std::string_view(buf, n).starts_with("POST ")
                                     ? R"({"id":"cmpl-1","object":"text_completion",)"
                                       R"("choices":[{"index":0,"text":"ok"}]})"
                                     : "";
        const std::string answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                                   "Content-Length: " +
                                   std::to_string(body.size()) + "\r\n\r\n" + body;
        asio::write(*s, asio::buffer(answer), rec);
        s->shutdown(asio::ip::tcp::socket::shutdown_both, rec);
        s->close(rec);
    });
    test::process router(LANES_ROUTER_BIN, {"--host", "127.0.0.1", "--port", "0", "--replica",
                                            backend.url(), "--max-retries", "0"});
    REQUIRE(test::wait_healthy(router.port(), 10s));
    const std::string prompt = R"({"prompt":"hello","max_tokens":2})";
    // Four at once leave four pooled connections, all closed by the backend.
    std::array<int, 4> first{};
    std::vector<std::thread> clients;
    for (auto& status : first)
        clients.emplace_back([&status, &router, &prompt] {
            status = test::post_json(router.port(), "/v1/completions", prompt).status;
        });
    for (auto& t : clients)
        t.join();
    std::this_thread::sleep_for(200ms);
    std::vector<int> after;
    for (int i = 0; i < 8; ++i)
        after.push_back(test::post_json(router.port(), "/v1/completions", prompt).status);
    for (const int status : first)
        CHECK(status == 200);
    for (const int status : after)
        CHECK(status == 200);
}

TEST_CASE("a stream whose first event comes after --stream-idle-timeout is relayed whole",
          "[router][failover]") {
    // A replica sends a stream's header when it takes the request, then the request may queue
    // before its first token: the first event is bounded by --first-byte-timeout (2 s here),
    // the pauses between events by --stream-idle-timeout (200 ms here).
    raw_backend backend([](raw_backend::socket_ptr s, const std::atomic<bool>& stopping) {
        namespace asio = boost::asio;
        char buf[8192];
        boost::system::error_code rec;
        while (!stopping.load()) {
            const std::size_t n = s->read_some(asio::buffer(buf), rec);
            if (rec)
                return;
            if (!std::string_view(buf, n).starts_with("POST ")) { // health, metrics
                asio::write(
                    *s,
                    asio::buffer(std::string_view("HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")),
                    rec);
                continue;
            }
            asio::write(*s,
                        asio::buffer(std::string_view(
                            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                            "Transfer-Encoding: chunked\r\n\r\n")),
                        rec);
            std::this_thread::sleep_for(600ms); // queued
            const std::string event = "data: {\"choices\":[{\"text\":\"late\"}]}\n\n";
            const std::string done = "data: [DONE]\n\n";
            std::ostringstream chunks;
            chunks << std::hex << event.size() << "\r\n"
                   << event << "\r\n"
                   << done.size() << "\r\n"
                   << done << "\r\n0\r\n\r\n";
            asio::write(*s, asio::buffer(chunks.str()), rec);
        }
    });
    test::process router(LANES_ROUTER_BIN,
                         {"--host", "127.0.0.1", "--port", "0", "--replica", backend.url(),
                          "--first-byte-timeout", "2s", "--stream-idle-timeout", "200ms",
                          "--max-retries", "0"});
    REQUIRE(test::wait_healthy(router.port(), 10s));
    const auto r = test::post_json(router.port(), "/v1/completions",
                                   R"({"prompt":"queued","max_tokens":2,"stream":true})");
    CHECK(r.status == 200);
    CHECK(r.body.find("late") != std::string::npos);
    CHECK(r.body.find("error") == std::string::npos);
    CHECK(r.body.find("[DONE]") != std::string::npos);
}

TEST_CASE("a replica that never answers: 502 after --first-byte-timeout, not a hang",
          "[router][failover]") {
    // A backend that answers GET (health, metrics) at once and never answers a POST.
    std::atomic<int> posts{0};
    raw_backend backend(raw_backend::answering([&posts](std::string_view got) -> std::string {
        if (got.starts_with("GET "))
            return "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        if (got.starts_with("POST "))
            posts.fetch_add(1); // read, never answered
        return {};
    }));
    test::process router(LANES_ROUTER_BIN,
                         {"--host", "127.0.0.1", "--port", "0", "--replica", backend.url(),
                          "--first-byte-timeout", "300ms", "--max-retries", "0"});
    REQUIRE(test::wait_healthy(router.port(), 10s));
    const auto start = std::chrono::steady_clock::now();
    const auto r = test::post_json(router.port(), "/v1/completions",
                                   R"({"prompt":"anyone there?","max_tokens":2})");
    const auto took = std::chrono::steady_clock::now() - start;
    CHECK(r.status == 502);
    CHECK(r.body.find("every replica tried failed") != std::string::npos);
    CHECK(took >= 250ms);
    CHECK(took < 3s);
    // Sent once: the health probes leave kept connections in the pool, and a timeout on one
    // is no sign of a stale connection, so the request is not sent again on a fresh one.
    CHECK(posts.load() == 1);
}

TEST_CASE("a replica without /metrics stays routable and is asked for them rarely",
          "[router][failover]") {
    // SGLang without --enable-metrics answers /metrics with 404: the replica is alive, so its
    // scrapes must not count as health failures (at 20 ms a scrape, two of them would eject it
    // within 50 ms, for good: each half-open moment would meet the next scrape first).
    std::atomic<int> scrapes{0};
    raw_backend backend(raw_backend::answering([&scrapes](std::string_view got) -> std::string {
        if (got.starts_with("GET /metrics ")) {
            scrapes.fetch_add(1);
            return "HTTP/1.1 404 Not Found\r\nContent-Length: 9\r\n\r\nnot found";
        }
        if (!got.starts_with("POST "))
            return "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"; // /health
        const std::string body = R"({"id":"cmpl-1","object":"text_completion",)"
                                 R"("choices":[{"index":0,"text":"ok"}]})";
        return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n\r\n" + body;
    }));
    test::process router(LANES_ROUTER_BIN, {"--host", "127.0.0.1", "--port", "0", "--replica",
                                            backend.url(), "--scrape-interval", "20ms",
                                            "--failure-threshold", "2", "--max-retries", "0"});
    REQUIRE(test::wait_healthy(router.port(), 10s));
    std::this_thread::sleep_for(600ms); // 30 scrape ticks
    const auto list = nlohmann::json::parse(test::get(router.port(), "/admin/replicas").body);
    REQUIRE(list.size() == 1);
    CHECK(list[0]["healthy"] == true);
    CHECK(list[0]["kv_usage"].is_null());
    for (int i = 0; i < 4; ++i)
        CHECK(test::post_json(router.port(), "/v1/completions", R"({"prompt":"hi","max_tokens":2})")
                  .status == 200);
    CHECK(scrapes.load() >= 1);
    CHECK(scrapes.load() <= 2); // then not again for --metrics-missing-interval (30 s)
}
