// Outcomes reported for a replica: the breaker decides, report_health counts each ejection in
// lanes_router_ejections_total{replica} and logs ejections and re-admissions.
#include "router/fleet/health_report.hpp"

#include "common/log.hpp"
#include "router/status_pages.hpp"
#include "tests/unit/common/capture_stderr.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <unistd.h>

using namespace lanes;
using lanes::test::capture_stderr;
using namespace std::chrono_literals;
namespace http = lanes::common::http;

namespace {

const auto t0 = std::chrono::steady_clock::time_point{} + 1h;

router::health_config breaker() {
    return {.failure_threshold = 3, .success_threshold = 2, .open_time = 5s};
}

double ejections(router::router_metrics& m, const router::replica& r) {
    return m.ejections.with({r.id()}).value();
}

} // namespace

TEST_CASE("report_health ejects after failure_threshold failures and counts it once", "[health]") {
    router::router_metrics metrics;
    router::replica r(http::url{"127.0.0.1", 8001, ""}, breaker());
    router::report_health(r, false, metrics, router::failure_origin::request, t0);
    router::report_health(r, false, metrics, router::failure_origin::request, t0);
    CHECK(ejections(metrics, r) == 0);
    CHECK(r.health.state(t0) == router::breaker_state::closed);
    router::report_health(r, true, metrics, router::failure_origin::request,
                          t0); // a success in between starts the count over
    router::report_health(r, false, metrics, router::failure_origin::request, t0);
    router::report_health(r, false, metrics, router::failure_origin::request, t0);
    CHECK(ejections(metrics, r) == 0);
    router::report_health(r, false, metrics, router::failure_origin::request,
                          t0); // the third in a row
    CHECK(ejections(metrics, r) == 1);
    CHECK(r.health.state(t0) == router::breaker_state::open);
    CHECK_FALSE(r.health.routable(t0 + 1s));
    // More failures while it is out eject nothing more.
    for (int i = 0; i < 5; ++i)
        router::report_health(r, false, metrics, router::failure_origin::request, t0 + 1s);
    CHECK(ejections(metrics, r) == 1);
    // The exposition names the replica.
    router::replica_pool pool;
    REQUIRE(pool.add(http::url{"127.0.0.1", 8001, ""}));
    CHECK(metrics.expose(router::readings_of(pool))
              .find("lanes_router_ejections_total{replica=\"http://127.0.0.1:8001\"} 1.0\n") !=
          std::string::npos);
}

TEST_CASE("report_health re-admits through half-open after open_time", "[health]") {
    router::router_metrics metrics;
    router::replica r(http::url{"127.0.0.1", 8002, ""}, breaker());
    for (int i = 0; i < 3; ++i)
        router::report_health(r, false, metrics, router::failure_origin::request, t0);
    REQUIRE(r.health.state(t0) == router::breaker_state::open);
    // Successes before open_time passed leave it out.
    router::report_health(r, true, metrics, router::failure_origin::request, t0 + 1s);
    router::report_health(r, true, metrics, router::failure_origin::request, t0 + 4s);
    CHECK(r.health.state(t0 + 4s) == router::breaker_state::open);
    // Half-open from t0 + 5 s: one success is not enough, the second closes it.
    router::report_health(r, true, metrics, router::failure_origin::request, t0 + 5s);
    CHECK(r.health.state(t0 + 5s) == router::breaker_state::half_open);
    router::report_health(r, true, metrics, router::failure_origin::request, t0 + 6s);
    CHECK(r.health.state(t0 + 6s) == router::breaker_state::closed);
    CHECK(r.health.routable(t0 + 6s));
    CHECK(ejections(metrics, r) == 1); // re-admission counts nothing

    // Ejected again; a failure while half-open ejects at once, and counts.
    for (int i = 0; i < 3; ++i)
        router::report_health(r, false, metrics, router::failure_origin::request, t0 + 7s);
    CHECK(ejections(metrics, r) == 2);
    router::report_health(r, true, metrics, router::failure_origin::request,
                          t0 + 12s); // half-open: one success
    router::report_health(r, false, metrics, router::failure_origin::request, t0 + 12s);
    CHECK(ejections(metrics, r) == 3);
    CHECK(r.health.state(t0 + 16s) == router::breaker_state::open); // opened again at 12 s
    CHECK(r.health.state(t0 + 17s) == router::breaker_state::half_open);
}

TEST_CASE("report_health counts each replica under its own label", "[health]") {
    router::router_metrics metrics;
    router::replica a(http::url{"10.0.0.1", 8000, ""}, {.failure_threshold = 1});
    router::replica b(http::url{"10.0.0.2", 8000, "/v"}, {.failure_threshold = 2});
    router::report_health(a, false, metrics, router::failure_origin::request, t0);
    router::report_health(b, false, metrics, router::failure_origin::request, t0);
    CHECK(ejections(metrics, a) == 1);
    CHECK(ejections(metrics, b) == 0);
    CHECK(metrics.ejections.with({"http://10.0.0.2:8000/v"}).value() == 0);
    router::report_health(b, false, metrics, router::failure_origin::request, t0);
    CHECK(metrics.ejections.with({"http://10.0.0.2:8000/v"}).value() == 1);
    CHECK(ejections(metrics, a) == 1);
}

TEST_CASE("report_health logs an ejection and a re-admission, nothing else", "[health]") {
    const auto saved = common::log::current_level();
    common::log::set_level(common::log::level::info);
    router::router_metrics metrics;
    router::replica r(http::url{"127.0.0.1", 8003, ""},
                      {.failure_threshold = 1, .success_threshold = 1, .open_time = 1s});
    const std::string quiet = capture_stderr(
        [&] { router::report_health(r, true, metrics, router::failure_origin::request, t0); });
    const std::string ejected = capture_stderr(
        [&] { router::report_health(r, false, metrics, router::failure_origin::request, t0); });
    const std::string again = capture_stderr([&] {
        router::report_health(r, false, metrics, router::failure_origin::request, t0);
    }); // already out
    const std::string back = capture_stderr(
        [&] { router::report_health(r, true, metrics, router::failure_origin::request, t0 + 1s); });
    common::log::set_level(saved);
    CHECK(quiet.empty());
    CHECK(ejected.ends_with(" WARN health http://127.0.0.1:8003 ejected after consecutive "
                            "failures\n"));
    CHECK(again.empty());
    CHECK(back.ends_with(" INFO health http://127.0.0.1:8003 re-admitted\n"));
}
