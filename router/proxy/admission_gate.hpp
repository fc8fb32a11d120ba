// The proxy's side of admission control (router/access/admission.hpp): a request waits in the
// queue while its model's replicas are full, preferring the replica its policy would choose when
// that one caches something for it; a request that leaves while waiting counts as 499, one that
// waits too long or finds the queue full gets a 503 with Retry-After.
#pragma once

#include "common/http/message.hpp"
#include "common/http/response_writer.hpp"
#include "router/access/admission.hpp"
#include "router/proxy/dispatch_plan.hpp"
#include "router/proxy/proxy_config.hpp"

#include <boost/asio/awaitable.hpp>

#include <cstddef>

namespace lanes::router {

class accounting;
class chooser;
class router_metrics;

class admission_gate {
public:
    admission_gate(const proxy_config& cfg, router_metrics& metrics, chooser& choose,
                   accounting& counts);

    // Waits in the admission queue when the model or its replicas are full; false when the
    // request was answered (refused) or its client left there. `ticket` holds the request's
    // place until it is routed.
    boost::asio::awaitable<bool> admit(common::http::request& req,
                                       common::http::response_writer& out,
                                       const dispatch_plan& plan, admission::ticket& ticket);
    bool enabled() const { return queue_.enabled(); }
    std::size_t waiting() const { return queue_.waiting(); }

private:
    // Whether a request should prefer a replica: with --admission-affinity-wait and a cap.
    bool waits_for_affinity(const dispatch_plan& plan) const;

    const proxy_config& cfg_;
    router_metrics& metrics_;
    chooser& choose_;
    accounting& counts_;
    admission queue_;
};

} // namespace lanes::router
