// Admission control through the real router: with both replicas at their cap, requests wait in
// the router, are let in in turn between clients, and the queue's overflow gets 503 at once.
#include "traffic.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <mutex>

using namespace lanes;
using namespace lanes::test;
using namespace std::chrono_literals;
using clock_type = std::chrono::steady_clock;

namespace {

const std::string slow = R"({"prompt":"a slow one","max_tokens":60,"ignore_eos":true})";

double metric(unsigned short port, const std::string& line_start) {
    const std::string text = get(port, "/metrics").body;
    const auto at = text.find("\n" + line_start + " ");
    return at == std::string::npos ? -1.0 : std::stod(text.substr(at + line_start.size() + 2));
}

} // namespace

TEST_CASE("admission: replicas at cap, requests wait in turn between clients, overflow is 503",
          "[admission]") {
    test::fleet f(2, {"--backend", "sim", "--sim-speedup", "1"},
                  {"--replica-max-inflight", "1", "--queue-size", "4", "--queue-timeout", "20s",
                   "--trusted-proxies", "127.0.0.0/8", "--policy", "least_loaded"});
    const auto port = f.router->port();
    struct done {
        std::string who;
        int status = 0;
        clock_type::time_point at;
    };
    std::mutex mutex;
    std::vector<done> finished;
    std::vector<std::thread> clients;
    const auto send = [&](const std::string& who, const std::string& address) {
        clients.emplace_back([&, who, address] {
            const auto r = post_json(port, "/v1/completions", slow, {{"X-Forwarded-For", address}});
            std::lock_guard lock(mutex);
            finished.push_back({who, r.status, clock_type::now()});
        });
    };
    // Both replicas busy, then client a queues three and client b one: the queue is full.
    send("hold1", "198.51.100.9");
    send("hold2", "198.51.100.9");
    REQUIRE(eventually(
        [&] {
            return metric(port, "lanes_router_replica_inflight{replica=\"" + f.replicas[0]->url() +
                                    "\"}") == 1.0 &&
                   metric(port, "lanes_router_replica_inflight{replica=\"" + f.replicas[1]->url() +
                                    "\"}") == 1.0;
        },
        scaled(5s)));
    for (const char* who : {"a1", "a2", "a3"}) {
        send(who, "198.51.100.1");
        std::this_thread::sleep_for(20ms);
    }
    send("b1", "198.51.100.2");
    REQUIRE(
        eventually([&] { return metric(port, "lanes_router_queue_depth") == 4.0; }, scaled(5s)));
    // The fifth waiter has no place: refused at once, with a Retry-After.
    const auto began = clock_type::now();
    const auto over =
        post_json(port, "/v1/completions", slow, {{"X-Forwarded-For", "198.51.100.3"}});
    CHECK(over.status == 503);
    CHECK_FALSE(over.header("retry-after").empty());
    CHECK(clock_type::now() - began < scaled(1s));
    for (auto& t : clients)
        t.join();
    std::map<std::string, done> by_name;
    for (const auto& d : finished) {
        CHECK(d.status == 200);
        by_name[d.who] = d;
    }
    REQUIRE(by_name.size() == 6);
    // b's single request went in the second pair, ahead of a's last two.
    CHECK(by_name["b1"].at < by_name["a2"].at);
    CHECK(by_name["b1"].at < by_name["a3"].at);
    CHECK(metric(port, "lanes_router_queue_rejections_total{reason=\"full\"}") == 1.0);
    CHECK(metric(port, "lanes_router_queue_wait_seconds_count") >= 6.0);
    // The two let in at once waited 0; the four queued behind them waited a slow answer or more.
    CHECK(metric(port, "lanes_router_queue_wait_seconds_sum") > 0.0);
}
