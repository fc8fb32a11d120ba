// read_request's first reader (request_view.hpp): a strict one-pass scanner for the common
// completions body, which needs no padded copy and no stage-one index.
#pragma once

#include "router/request/request_view.hpp"

#include <optional>
#include <string_view>

namespace lanes::router {

// For completions: reads ASCII bodies with a string prompt, each read field given once, and
// declines (nullopt) anything else, which the on-demand reader then takes. What it accepts it
// reads exactly as that reader does.
std::optional<request_view> scan_completion_request(std::string_view body);

} // namespace lanes::router
