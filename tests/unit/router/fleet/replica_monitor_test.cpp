// The replica monitor against small fake replicas that serve /metrics and /health: scraped
// stats land on the replica, prefix counters are mirrored, failed probes eject, a healthy probe
// re-admits, and a replica without metrics is not asked again at once.
#include "router/fleet/replica_monitor.hpp"

#include "common/http/server.hpp"
#include "router/fleet/replica_pool.hpp"

#include <boost/asio.hpp>
#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <thread>

using namespace lanes;
using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace bhttp = boost::beast::http;
namespace http = lanes::common::http;
using clock_type = std::chrono::steady_clock;

namespace {

// A replica on its own thread: /metrics answers `metrics_text` (or `metrics_status`), /health
// answers `health_status`; it counts both and notes each client port it is asked from.
struct fake_replica {
    asio::io_context io;
    std::mutex mutex;
    std::string metrics_text;
    int metrics_status = 200;
    int health_status = 200;
    std::set<unsigned short> client_ports;
    std::atomic<int> scrapes{0}, probes{0};
    http::server srv;
    unsigned short port = 0;
    std::thread thread;

    explicit fake_replica(std::string text)
        : metrics_text(std::move(text))
        , srv(
              io, {},
              [this](http::request& req, http::response_writer& out) { return answer(req, out); },
              "fake-replica") {
        port = srv.listen("127.0.0.1", 0);
        thread = std::thread([this] { io.run(); });
    }
    ~fake_replica() {
        srv.stop();
        io.stop();
        thread.join();
    }
    http::url url() const { return {"127.0.0.1", port, ""}; }
    void set(int metrics, int health, std::string text = {}) {
        std::lock_guard lock(mutex);
        metrics_status = metrics;
        health_status = health;
        if (!text.empty())
            metrics_text = std::move(text);
    }

    asio::awaitable<void> answer(http::request& req, http::response_writer& out) {
        int status = 404;
        std::string body = "not here";
        {
            std::lock_guard lock(mutex);
            client_ports.insert(out.remote().port());
            if (req.target() == "/metrics") {
                ++scrapes;
                status = metrics_status;
                body = status == 200 ? metrics_text : "no metrics";
            } else if (req.target() == "/health") {
                ++probes;
                status = health_status;
                body = "ok";
            }
        }
        co_await out.send(static_cast<bhttp::status>(status), "text/plain; version=0.0.4", {},
                          body);
    }
};

// A monitor on an io_context this thread runs, scraping and probing every 20 ms.
struct monitor_run {
    asio::io_context io;
    router::replica_pool pool;
    router::router_metrics metrics;
    router::replica_monitor mon;

    explicit monitor_run(router::health_config health = {}, router::monitor_config cfg = fast())
        : pool(health)
        , mon(io, pool, metrics, cfg, router::upstream_config{}) {}
    ~monitor_run() { finish(); }

    static router::monitor_config fast() {
        router::monitor_config cfg;
        cfg.scrape_interval = 20ms;
        cfg.health_interval = 20ms;
        cfg.scrape_timeout = 1s;
        cfg.health_timeout = 1s;
        return cfg;
    }
    std::shared_ptr<router::replica> add(const http::url& u) {
        REQUIRE(pool.add(u));
        return pool.find(u.str());
    }
    // Runs the monitor until `done()` or 5 s passed; returns done().
    template <class Pred>
    bool run_until(Pred done) {
        const auto end = clock_type::now() + 5s;
        while (!done() && clock_type::now() < end) {
            io.restart();
            io.run_one_for(10ms);
        }
        return done();
    }
    // Stops the loops and closes the kept connections (their deadline timers would keep the
    // io_context busy) until nothing is left to run.
    bool finish() {
        mon.stop();
        return run_until([this] {
            for (const auto& r : pool.all())
                while (auto conn = r->take_idle(io.get_executor()))
                    conn->close();
            return io.stopped();
        });
    }
    double ejections(const router::replica& r) { return metrics.ejections.with({r.id()}).value(); }
};

std::string fixture(const std::string& name) {
    std::ifstream in(std::string(LANES_SHARED_DIR) + "/fixtures/" + name, std::ios::binary);
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

std::string prefix_counters(int hits, int queries) {
    return "vllm:prefix_cache_hits_total{engine=\"0\"} " + std::to_string(hits) +
           "\nvllm:prefix_cache_queries_total{engine=\"0\"} " + std::to_string(queries) + "\n";
}

// A port nothing listens on.
unsigned short closed_port() {
    asio::io_context io;
    asio::ip::tcp::acceptor probe(io, {asio::ip::make_address("127.0.0.1"), 0});
    return probe.local_endpoint().port();
}

} // namespace

TEST_CASE("a DNS name gives one replica per host, IPv4 first", "[pool]") {
    namespace ip = boost::asio::ip;
    const auto a = ip::make_address("10.0.0.1"), b = ip::make_address("10.0.0.2");
    const auto a6 = ip::make_address("fd00::1"), b6 = ip::make_address("fd00::2");
    // Dual stack: the IPv6 records of the same pods are left out.
    CHECK(router::one_per_host({a6, a, b6, b}) == std::vector<ip::address>{a, b});
    // IPv6 only: kept. Repeats: once.
    CHECK(router::one_per_host({a6, b6, a6}) == std::vector<ip::address>{a6, b6});
    CHECK(router::one_per_host({}).empty());
}

TEST_CASE("monitor: a scrape puts the replica's vLLM metrics on it", "[monitor]") {
    fake_replica fake(fixture("vllm_v1_metrics.txt"));
    monitor_run m;
    const auto r = m.add(fake.url());
    const auto before = clock_type::now();
    m.mon.start();
    // Several scrapes and probes, so that connection reuse and the mirror's deltas show.
    REQUIRE(m.run_until([&] { return r->stats_version() >= 4 && fake.probes >= 4; }));
    const auto s = r->stats();
    REQUIRE(s.kv_usage);
    CHECK(*s.kv_usage == Approx(0.0234375));
    CHECK(s.waiting == 1);
    CHECK(s.running == 3);
    CHECK(s.num_blocks == 8192);
    CHECK(s.block_size == 16);
    CHECK(s.at >= before);
    // The cumulative counters are mirrored once, not added again on every scrape.
    CHECK(m.metrics.replica_prefix_hits.with({r->id()}).value() == 30720.0);
    CHECK(m.metrics.replica_prefix_queries.with({r->id()}).value() == 52311.0);
    CHECK(r->healthy());
    CHECK(m.ejections(*r) == 0);
    // Kept connections are used again: at most one each for the scrape, the probe and the
    // models read, which may all be out at once.
    std::lock_guard lock(fake.mutex);
    CHECK(fake.client_ports.size() <= 3);
}

TEST_CASE("monitor: mirrored prefix counters add increases, and all of a restart's value",
          "[monitor]") {
    fake_replica fake(prefix_counters(300, 1000));
    monitor_run m;
    const auto r = m.add(fake.url());
    auto& hits = m.metrics.replica_prefix_hits.with({r->id()});
    auto& queries = m.metrics.replica_prefix_queries.with({r->id()});
    m.mon.start();
    REQUIRE(m.run_until([&] { return hits.value() == 300 && queries.value() == 1000; }));
    fake.set(200, 200, prefix_counters(500, 1500)); // +200, +500
    REQUIRE(m.run_until([&] { return hits.value() == 500 && queries.value() == 1500; }));
    fake.set(200, 200, prefix_counters(50, 100)); // the replica restarted: counting from 0
    REQUIRE(m.run_until([&] { return hits.value() == 550 && queries.value() == 1600; }));
    const int scrapes = fake.scrapes;
    REQUIRE(m.run_until([&] { return fake.scrapes >= scrapes + 3; }));
    CHECK(hits.value() == 550); // unchanged values add nothing
    CHECK(queries.value() == 1600);
    const auto s = r->stats();
    CHECK_FALSE(s.kv_usage); // nothing else was in the text
    CHECK_FALSE(s.waiting);
}

TEST_CASE("monitor: a replica that does not answer is ejected once, the others stay", "[monitor]") {
    fake_replica fake(prefix_counters(1, 2));
    monitor_run m({.failure_threshold = 3, .success_threshold = 1, .open_time = 60s});
    const auto dead = m.add({"127.0.0.1", closed_port(), ""});
    const auto alive = m.add(fake.url());
    m.mon.start();
    REQUIRE(m.run_until([&] { return m.ejections(*dead) == 1; }));
    CHECK_FALSE(dead->healthy());
    CHECK(dead->health.state(clock_type::now()) == router::breaker_state::open);
    // More failed probes while it is out eject nothing more.
    const int probes = fake.probes;
    REQUIRE(m.run_until([&] { return fake.probes >= probes + 5; }));
    CHECK(m.ejections(*dead) == 1);
    CHECK(dead->stats_version() == 0); // no scrape ever answered
    CHECK(alive->healthy());
    CHECK(m.ejections(*alive) == 0);
    CHECK(alive->stats_version() > 0);
}

TEST_CASE("monitor: a probe that connects but times out ejects under the cap, a refused one not",
          "[monitor]") {
    // A replica that takes connections (the kernel's listen queue) and never answers: busy or
    // stuck, not gone.
    asio::io_context listen_io;
    asio::ip::tcp::acceptor silent(listen_io, {asio::ip::make_address("127.0.0.1"), 0});
    auto cfg = monitor_run::fast();
    cfg.health_timeout = 100ms;
    cfg.scrape_timeout = 100ms;
    cfg.models_timeout = 100ms;
    monitor_run m({.failure_threshold = 3, .success_threshold = 1, .open_time = 60s}, cfg);
    const auto slow = m.add({"127.0.0.1", silent.local_endpoint().port(), ""});
    const auto dead = m.add({"127.0.0.1", closed_port(), ""});
    m.mon.start();
    REQUIRE(m.run_until([&] { return m.ejections(*slow) == 1 && m.ejections(*dead) == 1; }));
    const auto now = clock_type::now();
    CHECK(slow->health.ejection_state(now).open);
    CHECK_FALSE(slow->health.ejection_state(now).by_probe); // capped, as a failed request is
    CHECK(dead->health.ejection_state(now).by_probe);       // refused: out whatever the cap
    CHECK_FALSE(slow->monitor.probe_ok.load());
}

TEST_CASE("monitor: a failing /health ejects, a healthy one re-admits after open_time",
          "[monitor]") {
    fake_replica fake(prefix_counters(1, 2));
    fake.set(200, 503); // metrics answer, /health does not: probes decide
    monitor_run m({.failure_threshold = 2, .success_threshold = 1, .open_time = 1s});
    const auto r = m.add(fake.url());
    m.mon.start();
    REQUIRE(m.run_until([&] { return m.ejections(*r) >= 1; }));
    const auto ejected_at = clock_type::now();
    fake.set(200, 200);
    const double ejected = m.ejections(*r);
    REQUIRE(m.run_until(
        [&] { return r->health.state(clock_type::now()) == router::breaker_state::closed; }));
    CHECK(clock_type::now() - ejected_at >= 900ms); // not before open_time (less the tick)
    CHECK(r->healthy());
    CHECK(m.ejections(*r) == ejected);
    CHECK(r->stats_version() > 0); // scrapes answered all along: they count for nothing here
}

TEST_CASE("monitor: a replica without /metrics is not scraped again at once", "[monitor]") {
    fake_replica fake("");
    fake.set(404, 200);
    monitor_run m;
    const auto r = m.add(fake.url());
    m.mon.start();
    REQUIRE(m.run_until([&] { return r->monitor.scrape_not_before.load() != 0; }));
    CHECK(r->monitor.scrape_not_before.load() > clock_type::now().time_since_epoch().count());
    const int probes = fake.probes;
    REQUIRE(m.run_until([&] { return fake.probes >= probes + 5; })); // five more ticks
    CHECK(fake.scrapes == 1);
    CHECK(r->stats_version() == 0);
    CHECK(r->healthy()); // an answer, even a 404, is alive
    CHECK(m.ejections(*r) == 0);
}
