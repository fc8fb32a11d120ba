// Talking to replicas: the timeouts, limits and credentials of the proxy's attempts and of the
// monitor's connections (both in router_config as `upstream`).
#pragma once

#include "common/http/message.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

namespace lanes::router {

struct upstream_config {
    common::http::duration connect_timeout{2'000};
    common::http::duration first_byte_timeout{300'000}; // request sent -> response header
    common::http::duration stream_idle_timeout{60'000}; // between two upstream body chunks
    common::http::duration write_timeout{10'000};       // sending a request
    std::int64_t max_idle_connections = 64;             // kept per replica
    std::size_t body_limit = 16 * 1024 * 1024;          // a non-streamed body; one streamed chunk
    // Credentials for the replicas ("Bearer KEY", from --replica-api-key): sent on a request
    // that carries none of its own, and in place of the client's with replace_client_auth.
    std::string replica_authorization;
    bool replace_client_auth = false;
    // x-lanes-replica and x-lanes-route-reason on answers (x-request-id is always sent). Off by
    // default: they show clients the fleet's addresses, and whether a prefix was cached.
    bool route_headers = false;
};

} // namespace lanes::router
