// The snapshot a policy sees: kept in place, scraped stats re-read only after a scrape changed
// them, health and staleness applied on every refresh.
#include "router/fleet/snapshot.hpp"

#include <catch2/catch.hpp>

#include <array>

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
    CHECK(cache.refresh(now + 100ms, 2'000ms)); // its capacity is known now: policies hear it
    CHECK(snap.replicas[0].kv_usage == 0.25);
    CHECK(snap.replicas[0].waiting == 3);
    CHECK(snap.replicas[0].num_blocks == 512);
    CHECK_FALSE(snap.replicas[1].kv_usage);

    s.kv_usage = 0.75; // the next scrape: its load moved, the pool did not
    replicas(0)->set_stats(s);
    CHECK_FALSE(cache.refresh(now + 200ms, 2'000ms));
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
    replicas(1)->traffic.inflight.fetch_add(1);
    cache.refresh(now + 9s, 2'000ms);
    CHECK_FALSE(snap.replicas[1].routable);
    replicas(1)->traffic.inflight.fetch_sub(1);
    CHECK(replicas(1)->health.on_success(now + 9s)); // the trial's success re-admits
    replicas(1)->traffic.inflight.fetch_add(3);
    cache.refresh(now + 9s, 2'000ms);
    CHECK(snap.replicas[1].routable);
    replicas(1)->traffic.inflight.fetch_sub(3);

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

TEST_CASE("a replica backing off after a 429 or 503 is not routable until its time is up",
          "[pool]") {
    router::replica_pool pool;
    REQUIRE(pool.add(*common::http::parse_url("http://127.0.0.1:9001")));
    REQUIRE(pool.add(*common::http::parse_url("http://127.0.0.1:9002")));
    router::snapshot_cache cache(pool);
    const auto now = std::chrono::steady_clock::now();
    cache.refresh(now, 2'000ms);
    cache.replica_at(0)->traffic.backoff_until.store((now + 1500ms).time_since_epoch().count());
    cache.refresh(now, 2'000ms);
    CHECK_FALSE(cache.view().replicas[0].routable);
    CHECK(cache.view().replicas[1].routable);
    CHECK(cache.longest_backoff({}, now) == 1500ms);
    const std::array<char, 2> only_second{0, 1};
    CHECK(cache.longest_backoff(only_second, now) == 0ms);
    cache.refresh(now + 1500ms, 2'000ms);
    CHECK(cache.view().replicas[0].routable);
}

TEST_CASE("which replicas serve a model, from their last models read", "[pool]") {
    router::replica_pool pool;
    for (const char* u :
         {"http://127.0.0.1:9001", "http://127.0.0.1:9002", "http://127.0.0.1:9003"})
        REQUIRE(pool.add(*common::http::parse_url(u)));
    router::snapshot_cache cache(pool);
    cache.refresh(std::chrono::steady_clock::now(), 2'000ms);
    std::vector<char> serves;
    // Nothing read yet: every replica is taken to serve anything.
    CHECK(cache.serving("m", serves) == router::snapshot_cache::model_serving::all);
    cache.replica_at(0)->set_models({true, false, {"a"}, {"{}"}});
    cache.replica_at(1)->set_models({true, false, {"b"}, {"{}"}});
    cache.refresh(std::chrono::steady_clock::now(), 2'000ms);
    CHECK(cache.serving("a", serves) == router::snapshot_cache::model_serving::some);
    // The third's list was never read: it serves nothing while others' lists are known (a
    // replica that cannot be reached makes a misspelled model no 5xx).
    CHECK(serves == std::vector<char>{1, 0, 0});
    CHECK(cache.serving("c", serves) == router::snapshot_cache::model_serving::none);
    cache.replica_at(2)->set_models({true, false, {"b"}, {"{}"}});
    cache.refresh(std::chrono::steady_clock::now(), 2'000ms);
    CHECK(cache.serving("c", serves) == router::snapshot_cache::model_serving::none);
    CHECK(cache.serving("", serves) == router::snapshot_cache::model_serving::all);
}

TEST_CASE("failed requests eject at most max_ejection_percent of a model's replicas", "[pool]") {
    router::replica_pool pool(router::health_config{1, 1, 60'000ms, 50});
    for (const char* u : {"http://127.0.0.1:9001", "http://127.0.0.1:9002", "http://127.0.0.1:9003",
                          "http://127.0.0.1:9004"})
        REQUIRE(pool.add(*common::http::parse_url(u)));
    router::snapshot_cache cache(pool, 50);
    const auto t0 = std::chrono::steady_clock::now();
    cache.refresh(t0, 2'000ms);
    // Three of four fail requests, the first the longest ago: one of them comes back (two is the
    // cap), the least recently failed.
    for (std::size_t i = 0; i < 3; ++i)
        cache.replica_at(i)->health.on_failure(t0 + std::chrono::milliseconds(10 * i));
    cache.refresh(t0 + 50ms, 2'000ms);
    const auto& v = cache.view().replicas;
    CHECK(v[0].routable); // failed first: kept routable by the cap
    CHECK_FALSE(v[1].routable);
    CHECK_FALSE(v[2].routable);
    CHECK(v[3].routable);
    // A probe that timed out counts as a failed request: the cap still keeps one back.
    cache.replica_at(3)->health.on_failure(t0 + 55ms, router::failure_origin::probe_slow);
    cache.refresh(t0 + 56ms, 2'000ms);
    CHECK(v[0].routable + v[1].routable + v[2].routable + v[3].routable == 2);
    CHECK(v[0].routable); // still the least recently failed
    CHECK(v[1].routable);
    // A failed probe takes a replica out whatever the cap says.
    cache.replica_at(0)->health.on_failure(t0 + 60ms, router::failure_origin::probe);
    cache.refresh(t0 + 70ms, 2'000ms);
    CHECK_FALSE(v[0].routable);
}

TEST_CASE("a replica's lost cache (a new epoch) is a change the policies hear of", "[pool]") {
    router::replica_pool pool(router::health_config{});
    REQUIRE(pool.add(*common::http::parse_url("http://127.0.0.1:9001")));
    router::snapshot_cache cache(pool);
    const auto now = std::chrono::steady_clock::now();
    CHECK(cache.refresh(now, 2'000ms));
    CHECK_FALSE(cache.refresh(now + 10ms, 2'000ms));
    cache.replica_at(0)->epoch.fetch_add(1); // a restart, an ejection
    CHECK(cache.refresh(now + 20ms, 2'000ms));
    CHECK(cache.view().replicas[0].epoch == 1);
    CHECK_FALSE(cache.refresh(now + 30ms, 2'000ms));
}
