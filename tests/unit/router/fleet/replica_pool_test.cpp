// The snapshot a policy sees: kept in place, scraped stats re-read only after a scrape changed
// them, health and staleness applied on every refresh.
#include "router/fleet/replica_monitor.hpp"
#include "router/fleet/replica_pool.hpp"

#include <catch2/catch.hpp>

using namespace lanes;
using namespace std::chrono_literals;

TEST_CASE("refresh shows every scrape, the stale cutoff and ejection", "[pool]") {
    router::replica_pool pool(router::health_config{1, 1, 5'000ms});
    REQUIRE(pool.add(*common::http::parse_url("http://127.0.0.1:9001")));
    REQUIRE(pool.add(*common::http::parse_url("http://127.0.0.1:9002")));
    router::pool_snapshot snap;
    std::vector<std::shared_ptr<router::replica>> replicas;
    std::uint64_t seen = UINT64_MAX;
    std::vector<std::pair<std::uint64_t, router::scraped_stats>> stats;
    const auto now = std::chrono::steady_clock::now();
    pool.refresh(snap, replicas, seen, now, 2'000ms, stats);
    REQUIRE(snap.replicas.size() == 2);
    CHECK_FALSE(snap.replicas[0].kv_usage);
    CHECK(snap.replicas[0].routable);

    router::scraped_stats s;
    s.kv_usage = 0.25;
    s.waiting = 3;
    s.num_blocks = 512;
    s.at = now;
    replicas[0]->set_stats(s);
    pool.refresh(snap, replicas, seen, now + 100ms, 2'000ms, stats);
    CHECK(snap.replicas[0].kv_usage == 0.25);
    CHECK(snap.replicas[0].waiting == 3);
    CHECK(snap.replicas[0].num_blocks == 512);
    CHECK_FALSE(snap.replicas[1].kv_usage);

    s.kv_usage = 0.75; // the next scrape
    replicas[0]->set_stats(s);
    pool.refresh(snap, replicas, seen, now + 200ms, 2'000ms, stats);
    CHECK(snap.replicas[0].kv_usage == 0.75);

    // No scrape for longer than the cutoff: the load figures are dropped, the capacity is kept.
    pool.refresh(snap, replicas, seen, now + 3s, 2'000ms, stats);
    CHECK_FALSE(snap.replicas[0].kv_usage);
    CHECK_FALSE(snap.replicas[0].waiting);
    CHECK(snap.replicas[0].num_blocks == 512);

    // One failure ejects (threshold 1); one success after the open time re-admits.
    CHECK(replicas[1]->health.on_failure(now + 3s));
    pool.refresh(snap, replicas, seen, now + 3s, 2'000ms, stats);
    CHECK_FALSE(snap.replicas[1].routable);
    CHECK(snap.replicas[0].routable);
    CHECK_FALSE(replicas[1]->health.on_success(now + 4s)); // still open: nothing changes
    pool.refresh(snap, replicas, seen, now + 4s, 2'000ms, stats);
    CHECK_FALSE(snap.replicas[1].routable);
    // Half-open by then: routable while no request is out on it, one trial at a time.
    pool.refresh(snap, replicas, seen, now + 9s, 2'000ms, stats);
    CHECK(snap.replicas[1].routable);
    replicas[1]->inflight.fetch_add(1);
    pool.refresh(snap, replicas, seen, now + 9s, 2'000ms, stats);
    CHECK_FALSE(snap.replicas[1].routable);
    replicas[1]->inflight.fetch_sub(1);
    CHECK(replicas[1]->health.on_success(now + 9s)); // the trial's success re-admits
    replicas[1]->inflight.fetch_add(3);
    pool.refresh(snap, replicas, seen, now + 9s, 2'000ms, stats);
    CHECK(snap.replicas[1].routable);
    replicas[1]->inflight.fetch_sub(3);

    // A replica added later appears, with no stats of its own.
    REQUIRE(pool.add(*common::http::parse_url("http://127.0.0.1:9003")));
    pool.refresh(snap, replicas, seen, now + 9s, 2'000ms, stats);
    REQUIRE(snap.replicas.size() == 3);
    CHECK_FALSE(snap.replicas[2].kv_usage);
}

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
