#include "router/fleet/health_report.hpp"

#include "common/log.hpp"

namespace lanes::router {

void report_health(replica& r, bool ok, router_metrics& metrics, failure_origin origin,
                   std::chrono::steady_clock::time_point now) {
    if (origin != failure_origin::request)
        r.monitor.probe_ok.store(ok, std::memory_order_relaxed);
    if (ok) {
        if (r.health.on_success(now, origin))
            LANES_LOG(info, "health", r.id() << " re-admitted");
        return;
    }
    if (r.health.on_failure(now, origin)) {
        r.epoch.fetch_add(1, std::memory_order_relaxed);
        metrics.ejections.with({r.id()}).inc();
        LANES_LOG(warn, "health",
                  r.id() << " ejected after consecutive failures"
                         << (origin == failure_origin::probe        ? " (a /health probe)"
                             : origin == failure_origin::probe_slow ? " (a /health probe timed out)"
                                                                    : ""));
    }
}

} // namespace lanes::router
