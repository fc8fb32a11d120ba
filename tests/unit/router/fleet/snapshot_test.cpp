// The snapshot a policy sees: kept in place, scraped stats re-read only after a scrape changed
// them, health and staleness applied on every refresh.
#include "router/fleet/snapshot.hpp"

#include <catch2/catch.hpp>

using namespace lanes;
using namespace std::chrono_literals;

TEST_CASE("refresh shows every scrape, the stale cutoff and ejection", "[pool]") {
    router::replica_pool pool(router::health_config{1, 1, 5'000ms});
    REQUIRE(pool.add(*common::http::parse_url("http://127.0.0.1:9001")));
    REQUIRE(pool.add(*common::http::parse_url("http://127.0.0.1:9002")));
    router::snapshot_cache cache(pool);
    const router::pool_snapshot& snap = cache.view();
    const auto replicas = [&](std::size_t i) { return cache.replica_at(i); };
    const auto now = std::chrono::steady_clock::now();
    CHECK(cache.refresh(now, 2'000ms)); // the first: the membership is new
    REQUIRE(snap.replicas.size() == 2);
    CHECK_FALSE(snap.replicas[0].kv_usage);
    CHECK(snap.replicas[0].routable);

    router::scraped_stats s;
    s.kv_usage = 0.25;
    s.waiting = 3;
    s.num_blocks = 512;
    s.at = now;
    replicas(0)->set_stats(s);
    CHECK_FALSE(cache.refresh(now + 100ms, 2'000ms));
    CHECK(snap.replicas[0].kv_usage == 0.25);
    CHECK(snap.replicas[0].waiting == 3);
    CHECK(snap.replicas[0].num_blocks == 512);
    CHECK_FALSE(snap.replicas[1].kv_usage);

    s.kv_usage = 0.75; // the next scrape
    replicas(0)->set_stats(s);
    cache.refresh(now + 200ms, 2'000ms);
    CHECK(snap.replicas[0].kv_usage == 0.75);

    // No scrape for longer than the cutoff: the load figures are dropped, the capacity is kept.
    cache.refresh(now + 3s, 2'000ms);
    CHECK_FALSE(snap.replicas[0].kv_usage);
    CHECK_FALSE(snap.replicas[0].waiting);
    CHECK(snap.replicas[0].num_blocks == 512);

    // One failure ejects (threshold 1); one success after the open time re-admits.
    CHECK(replicas(1)->health.on_failure(now + 3s));
    cache.refresh(now + 3s, 2'000ms);
    CHECK_FALSE(snap.replicas[1].routable);
    CHECK(snap.replicas[0].routable);
    CHECK_FALSE(replicas(1)->health.on_success(now + 4s)); // still open: nothing changes
    cache.refresh(now + 4s, 2'000ms);
    CHECK_FALSE(snap.replicas[1].routable);
    // Half-open by then: routable while no request is out on it, one trial at a time.
    cache.refresh(now + 9s, 2'000ms);
    CHECK(snap.replicas[1].routable);
    replicas(1)->inflight.fetch_add(1);
    cache.refresh(now + 9s, 2'000ms);
    CHECK_FALSE(snap.replicas[1].routable);
    replicas(1)->inflight.fetch_sub(1);
    CHECK(replicas(1)->health.on_success(now + 9s)); // the trial's success re-admits
    replicas(1)->inflight.fetch_add(3);
    cache.refresh(now + 9s, 2'000ms);
    CHECK(snap.replicas[1].routable);
    replicas(1)->inflight.fetch_sub(3);

    // A replica added later appears, with no stats of its own.
    REQUIRE(pool.add(*common::http::parse_url("http://127.0.0.1:9003")));
    CHECK(cache.refresh(now + 9s, 2'000ms));
    REQUIRE(snap.replicas.size() == 3);
    CHECK_FALSE(snap.replicas[2].kv_usage);
}

TEST_CASE("clear lets go of the replicas until the next refresh", "[pool]") {
    router::replica_pool pool;
    REQUIRE(pool.add(*common::http::parse_url("http://127.0.0.1:9001")));
    router::snapshot_cache cache(pool);
    cache.refresh(std::chrono::steady_clock::now(), 2'000ms);
    const std::weak_ptr<router::replica> held = cache.replica_at(0);
    REQUIRE(pool.remove("http://127.0.0.1:9001"));
    CHECK_FALSE(held.expired()); // the view still holds the removed replica
    cache.clear();
    CHECK(held.expired());
    CHECK(cache.view().replicas.empty());
    CHECK(cache.refresh(std::chrono::steady_clock::now(), 2'000ms)); // copied again
    CHECK(cache.view().replicas.empty());
}
