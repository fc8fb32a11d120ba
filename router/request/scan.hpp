// extract_request's first tier (request_view.hpp): a strict one-pass scanner for the common
// completions body, which needs no padded copy and no stage-one index.
#pragma once

#include "router/request/request_view.hpp"

#include <optional>
#include <string_view>

namespace lanes::router {

// extract_request's first tier, for completions: a one-pass scanner that reads ASCII bodies with
// a string prompt and declines (nullopt) anything else, which the on-demand parser then takes.
// What it accepts it reads exactly as that parser does.
std::optional<request_view> scan_completion_request(std::string_view body);

} // namespace lanes::router
