// Who sent a request, as the router's access control saw it: the API key it presented (none when
// the router is open). Passed by value into the handlers, so a key file reloaded meanwhile does
// not pull it away from a request in progress.
#pragma once

#include "router/access/api_keys.hpp"

#include <memory>
#include <string>

namespace lanes::router {

struct client {
    std::shared_ptr<const api_key> key;

    // The key's name, "" when the router is open.
    const std::string& name() const {
        static const std::string none;
        return key ? key->name : none;
    }
};

} // namespace lanes::router
