#include "router/proxy/proxy.hpp"

#include "router/metrics.hpp"
#include "router/policies/policy.hpp"

namespace lanes::router {

proxy::proxy(const proxy_config& cfg, replica_pool& pool, router_metrics& metrics,
             std::unique_ptr<policy> routing, models_refresher refresh_models)
    : counts_(metrics, pool, cfg.ui_decisions, cfg.access_log, cfg.refusal_log_rate)
    , limits_(cfg.rate, metrics, counts_)
    , choose_(cfg, pool, metrics, std::move(routing))
    , gate_(cfg, metrics, choose_, counts_)
    , responses_(cfg.response_affinity_capacity)
    , dispatch_(cfg, metrics, choose_, gate_, counts_, responses_, refresh_models)
    , plans_(cfg, pool, metrics, limits_, counts_, responses_, dispatch_)
    , front_(cfg, pool, metrics, plans_, limits_, counts_, std::move(refresh_models)) {
    if (gate_.enabled())
        metrics.read_queue_depth_from([this] { return gate_.waiting(); });
}

} // namespace lanes::router
