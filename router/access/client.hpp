// Who sent a request, as the router's access control saw it: the API key it presented (none when
// the router is open) and whom its rate limits count. Passed by value into the handlers, so a key
// file reloaded meanwhile does not pull it away from a request in progress.
#pragma once

#include "router/access/api_keys.hpp"

#include <memory>
#include <string>

namespace lanes::router {

struct client {
    std::shared_ptr<const api_key> key;
    // Whom the rate limits count: the key's name, else the client's address.
    std::string identity;

    const key_limits* limits() const { return key ? &key->limits : nullptr; }

    // The key's name, "" when the router is open.
    const std::string& name() const {
        static const std::string none;
        return key ? key->name : none;
    }
};

} // namespace lanes::router
