// The router's metrics: expose(readings_of(pool)) sets the per-replica gauges from the pool as it
// is now and drops those of replicas that left; the counters keep their children and are exposed
// typed.
#include "router/metrics.hpp"
#include "router/status_pages.hpp"

#include "common/metrics/prom_parser.hpp"
#include "router/fleet/replica_pool.hpp"

#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>
#include <vector>

using namespace lanes;
using namespace std::chrono_literals;
namespace http = lanes::common::http;

namespace {

const std::string a_id = "http://10.0.0.1:8001", b_id = "http://10.0.0.2:8001";

// The value of the sample `name`{replica=`id`} in `text`, if there is one.
std::optional<double> sample(const std::string& text, const std::string& name,
                             const std::string& id) {
    const auto parsed = common::prom::parse(text);
    REQUIRE(parsed.ok());
    if (const auto* s = parsed.find(name, {{"replica", id}}))
        return s->value;
    return std::nullopt;
}

bool has_line(const std::string& text, const std::string& line) {
    return text.find(line + "\n") != std::string::npos;
}

} // namespace

TEST_CASE("expose sets each present replica's gauges from the pool", "[metrics]") {
    router::router_metrics metrics;
    router::replica_pool pool({.failure_threshold = 1, .success_threshold = 1, .open_time = 60s});
    REQUIRE(pool.add(http::url{"10.0.0.1", 8001, ""}));
    REQUIRE(pool.add(http::url{"10.0.0.2", 8001, ""}));
    const auto a = pool.find(a_id), b = pool.find(b_id);
    a->traffic.inflight = 5;
    b->draining = true;
    b->health.on_failure(std::chrono::steady_clock::now()); // ejected for a minute
    router::scraped_stats s;
    s.kv_usage = 0.5;
    s.waiting = 2;
    s.running = 7;
    a->set_stats(s);

    const std::string text = metrics.expose(router::readings_of(pool));
    CHECK(sample(text, "lanes_router_replica_up", a_id) == 1.0);
    CHECK(sample(text, "lanes_router_replica_up", b_id) == 0.0);
    CHECK(sample(text, "lanes_router_replica_draining", a_id) == 0.0);
    CHECK(sample(text, "lanes_router_replica_draining", b_id) == 1.0);
    CHECK(sample(text, "lanes_router_replica_inflight", a_id) == 5.0);
    CHECK(sample(text, "lanes_router_replica_inflight", b_id) == 0.0);
    CHECK(has_line(text, "lanes_router_replica_kv_usage_ratio{replica=\"" + a_id + "\"} 0.5"));
    CHECK(has_line(text, "lanes_router_replica_waiting_requests{replica=\"" + a_id + "\"} 2.0"));
    CHECK(has_line(text, "lanes_router_replica_running_requests{replica=\"" + a_id + "\"} 7.0"));
    // Nothing scraped from b: no scraped gauges for it, rather than zeros.
    CHECK_FALSE(sample(text, "lanes_router_replica_kv_usage_ratio", b_id));
    CHECK_FALSE(sample(text, "lanes_router_replica_waiting_requests", b_id));
    CHECK_FALSE(sample(text, "lanes_router_replica_running_requests", b_id));

    // The gauges follow the pool at each expose.
    a->traffic.inflight = 1;
    b->draining = false;
    const std::string next = metrics.expose(router::readings_of(pool));
    CHECK(sample(next, "lanes_router_replica_inflight", a_id) == 1.0);
    CHECK(sample(next, "lanes_router_replica_draining", b_id) == 0.0);
}

TEST_CASE("expose drops the gauges and counters of removed replicas, keeping the router's own",
          "[metrics]") {
    router::router_metrics metrics;
    router::replica_pool pool;
    REQUIRE(pool.add(http::url{"10.0.0.1", 8001, ""}));
    REQUIRE(pool.add(http::url{"10.0.0.2", 8001, ""}));
    router::scraped_stats s;
    s.kv_usage = 0.25;
    pool.find(a_id)->set_stats(s);
    metrics.ejections.with({a_id}).inc();
    metrics.replica_prefix_hits.with({a_id}).inc(40);
    metrics.requests.with({a_id, "200", "prefix_match", "m"}).inc(3);
    metrics.requests.with({"none", "404", "none", "m"}).inc();
    const std::string before = metrics.expose(router::readings_of(pool));
    REQUIRE(sample(before, "lanes_router_replica_up", a_id));
    REQUIRE(sample(before, "lanes_router_replica_kv_usage_ratio", a_id));

    REQUIRE(pool.remove(a_id));
    const std::string after = metrics.expose(router::readings_of(pool));
    for (const auto* name :
         {"lanes_router_replica_up", "lanes_router_replica_draining",
          "lanes_router_replica_inflight", "lanes_router_replica_kv_usage_ratio"}) {
        INFO(name);
        CHECK_FALSE(sample(after, name, a_id));
    }
    CHECK(sample(after, "lanes_router_replica_up", b_id) == 1.0);
    // Its counters go too (a fleet whose DNS names churn would otherwise grow the exposition
    // for ever); the router's own answers (replica "none") stay.
    CHECK_FALSE(sample(after, "lanes_router_ejections_total", a_id));
    CHECK_FALSE(sample(after, "lanes_router_replica_prefix_cache_hits_total", a_id));
    CHECK(after.find("replica=\"" + a_id + "\"") == std::string::npos);
    CHECK(has_line(after, "lanes_router_requests_total{code=\"404\",model=\"m\","
                          "reason=\"none\",replica=\"none\"} 1.0"));

    // Back in the pool: its gauges come back, from the fresh replica.
    REQUIRE(pool.add(http::url{"10.0.0.1", 8001, ""}));
    const std::string back = metrics.expose(router::readings_of(pool));
    CHECK(sample(back, "lanes_router_replica_up", a_id) == 1.0);
    CHECK_FALSE(sample(back, "lanes_router_replica_kv_usage_ratio", a_id)); // not scraped yet
}

TEST_CASE("every router metric is exposed with its help and type lines", "[metrics]") {
    router::router_metrics metrics;
    const router::replica_pool empty;
    metrics.retries.inc(2);
    metrics.errors.with({"upstream_timeout"}).inc();
    metrics.duration.observe(0.02);
    metrics.read_connections_from([] { return router::router_metrics::connection_counts{3, 7}; });
    const std::string text = metrics.expose(router::readings_of(empty));
    const auto parsed = common::prom::parse(text);
    REQUIRE(parsed.ok());
    CHECK(text.find("\nlanes_router_client_connections 3") != std::string::npos);
    CHECK(text.find("\nlanes_router_client_connections_refused_total 7") != std::string::npos);
    const std::vector<std::pair<std::string, std::string>> families = {
        {"lanes_router_requests_total", "counter"},
        {"lanes_router_errors_total", "counter"},
        {"lanes_router_retries_total", "counter"},
        {"lanes_router_ejections_total", "counter"},
        {"lanes_router_backpressure_total", "counter"},
        {"lanes_router_request_duration_seconds", "histogram"},
        {"lanes_router_time_to_first_byte_seconds", "histogram"},
        {"lanes_router_routing_decision_seconds", "histogram"},
        {"lanes_router_predicted_prefix_hit_tokens_total", "counter"},
        {"lanes_router_predicted_prefix_query_tokens_total", "counter"},
        {"lanes_router_replica_prefix_cache_hits_total", "counter"},
        {"lanes_router_replica_prefix_cache_queries_total", "counter"},
        {"lanes_router_prefix_cache_hit_ratio", "gauge"},
        {"lanes_router_replica_up", "gauge"},
        {"lanes_router_replica_draining", "gauge"},
        {"lanes_router_replica_inflight", "gauge"},
        {"lanes_router_replica_kv_usage_ratio", "gauge"},
        {"lanes_router_replica_waiting_requests", "gauge"},
        {"lanes_router_replica_running_requests", "gauge"},
        {"lanes_router_api_key_requests_total", "counter"},
        {"lanes_router_access_refusals_total", "counter"},
        {"lanes_router_queue_depth", "gauge"},
        {"lanes_router_queue_wait_seconds", "histogram"},
        {"lanes_router_queue_rejections_total", "counter"},
        {"lanes_router_client_connections", "gauge"},
        {"lanes_router_client_connections_refused_total", "counter"},
        {"lanes_router_kv_event_batches_total", "counter"},
        {"lanes_router_kv_event_gaps_total", "counter"},
        {"lanes_router_kv_event_errors_total", "counter"},
        {"lanes_router_kv_events_live", "gauge"},
        {"lanes_router_kv_bootstraps_total", "counter"},
        {"lanes_router_tokenize_total", "counter"},
        {"lanes_router_ideal_prefix_hit_tokens_total", "counter"},
        {"lanes_router_tokenize_seconds", "histogram"},
        {"lanes_router_local_tokenize_seconds", "histogram"},
    };
    CHECK(parsed.types.size() == families.size());
    for (const auto& [name, type] : families) {
        INFO(name);
        REQUIRE(parsed.types.count(name) == 1);
        CHECK(parsed.types.at(name) == type);
        CHECK(has_line(text, "# TYPE " + name + " " + type));
        CHECK(parsed.help.count(name) == 1);
        CHECK(text.find("# HELP " + name + " ") != std::string::npos);
    }
    CHECK(has_line(text, "# HELP lanes_router_retries_total Attempts repeated on another replica "
                         "before any byte was sent."));
    // Unlabeled ones are there from the start, labeled ones once used.
    CHECK(has_line(text, "lanes_router_retries_total 2.0"));
    CHECK(has_line(text, "lanes_router_predicted_prefix_hit_tokens_total 0.0"));
    CHECK(has_line(text, "lanes_router_errors_total{kind=\"upstream_timeout\"} 1.0"));
    CHECK(has_line(text, "lanes_router_request_duration_seconds_bucket{le=\"0.01\"} 0.0"));
    CHECK(has_line(text, "lanes_router_request_duration_seconds_bucket{le=\"0.025\"} 1.0"));
    CHECK(has_line(text, "lanes_router_request_duration_seconds_count 1.0"));
    CHECK(text.find("lanes_router_ejections_total{") == std::string::npos);
    CHECK(text.find("lanes_router_replica_up{") == std::string::npos); // no replicas
}
