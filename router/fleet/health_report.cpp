#include "router/fleet/health_report.hpp"

#include "common/log.hpp"

namespace lanes::router {

void report_health(replica& r, bool ok, router_metrics& metrics,
                   std::chrono::steady_clock::time_point now) {
    if (ok) {
        if (r.health.on_success(now))
            LANES_LOG(info, "health", r.id() << " re-admitted");
        return;
    }
    if (r.health.on_failure(now)) {
        metrics.ejections.with({r.id()}).inc();
        LANES_LOG(warn, "health", r.id() << " ejected after consecutive failures");
    }
}

} // namespace lanes::router
