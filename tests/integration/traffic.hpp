// Helpers of the router's integration tests: a shared-prefix workload sent through the router,
// the fleet's counters as the router mirrors them, waiting on a condition with a deadline, and a
// hand-written backend for the cases a real replica cannot produce.
#pragma once

#include "harness.hpp"

#include "common/metrics/prom_parser.hpp"

#include <boost/asio.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace lanes::test {

using namespace std::chrono_literals;

// Shared-prefix workload: `groups` system prompts of `system_len` bytes, `per_group` questions
// each, shuffled with a fixed seed.
inline std::vector<std::string> shared_prefix_prompts(int groups, int per_group, int system_len,
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
inline run_stats send_all(unsigned short port, const std::vector<std::string>& prompts,
                          int concurrency, int max_tokens = 2) {
    run_stats stats;
    std::mutex mutex;
    std::atomic<std::size_t> next{0};
    std::vector<std::thread> clients;
    for (int c = 0; c < concurrency; ++c)
        clients.emplace_back([&] {
            for (std::size_t i; (i = next++) < prompts.size();) {
                const nlohmann::json body = {
                    {"prompt", prompts[i]}, {"max_tokens", max_tokens}, {"ignore_eos", true}};
                const auto r = post_json(port, "/v1/completions", body.dump());
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

inline double fleet_counter(unsigned short router_port, const std::string& name) {
    const auto parsed = common::prom::parse(get(router_port, "/metrics").body);
    return parsed.sum(name).value_or(0.0);
}

inline double imbalance(const run_stats& s, int replicas) {
    double max = 0, total = 0;
    for (const auto& [r, n] : s.per_replica) {
        max = std::max(max, static_cast<double>(n));
        total += n;
    }
    return max / (total / replicas);
}

// Polls `pred` until it holds or `limit` (scaled under a sanitizer) passes.
template <class Pred>
inline bool eventually(Pred pred, std::chrono::milliseconds limit) {
    const auto deadline = std::chrono::steady_clock::now() + scaled(limit);
    while (std::chrono::steady_clock::now() < deadline) {
        if (pred())
            return true;
        std::this_thread::sleep_for(5ms);
    }
    return false;
}

// Hit rate measured by the replicas themselves, as mirrored by the router's scrapes.
inline double fleet_hit_rate(const fleet& f) {
    // Wait until the router's mirror has caught up with every replica's own counters.
    double replica_queries = 0;
    for (const auto& r : f.replicas) {
        const auto p = common::prom::parse(get(r->port(), "/metrics").body);
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

inline const std::vector<std::string> sim_replica = {"--backend", "sim",         "--sim-speedup",
                                                     "20",        "--kv-blocks", "160"};

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

// A router with `--tokenizer dir` in front of `replicas`, healthy and subscribed to each one's
// KV events.
inline std::unique_ptr<process>
tokenizer_router(const std::vector<std::unique_ptr<process>>& replicas, const std::string& dir) {
    std::vector<std::string> args{
        "--host", "127.0.0.1",    "--port", "0",           "--scrape-interval",
        "100ms",  "--access-log", "false",  "--tokenizer", dir};
    for (const auto& r : replicas) {
        args.push_back("--replica");
        args.push_back(r->url());
    }
    auto router = std::make_unique<process>(LANES_ROUTER_BIN, args);
    REQUIRE(wait_healthy(router->port(), 10s));
    for (const auto& r : replicas) {
        REQUIRE(eventually(
            [&] {
                return get(router->port(), "/metrics")
                           .body.find("lanes_router_kv_events_live{replica=\"" + r->url() +
                                      "\"} 1") != std::string::npos;
            },
            5s));
    }
    return router;
}

// Sends `count` chats, each with a 400-byte system prompt of its own, twice through the router
// on `port`: the second time each must go where the first went, routed prefix_match_precise.
inline void check_chats_repeat_precisely(unsigned short port, int count) {
    const auto chat = [port](int i) {
        std::string system = "Tenant " + std::to_string(i) + ": ";
        while (system.size() < 400)
            system +=
                "the replica that already holds the prefix " + std::to_string(i) + " serves it. ";
        return post_json(port, "/v1/chat/completions",
                         R"({"messages":[{"role":"system","content":")" + system +
                             R"("},{"role":"user","content":"go"}],"max_tokens":2})");
    };
    std::map<int, std::string> placed;
    for (int i = 0; i < count; ++i) {
        const auto r = chat(i);
        REQUIRE(r.status == 200);
        placed[i] = r.header("x-lanes-replica");
    }
    for (int i = 0; i < count; ++i) {
        const auto r = chat(i);
        REQUIRE(r.status == 200);
        INFO("prompt " << i);
        CHECK(r.header("x-lanes-replica") == placed[i]);
        CHECK(r.header("x-lanes-route-reason") == "prefix_match_precise");
    }
}

} // namespace lanes::test
