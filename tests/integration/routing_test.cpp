// The routing effect with real replica processes: prefix against round-robin on a shared-prefix
// workload, and the router's predicted hits against the replicas' own counters.
#include "traffic.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <csignal>

using namespace lanes;
using namespace lanes::test;
using namespace std::chrono_literals;
using verb = boost::beast::http::verb;

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
