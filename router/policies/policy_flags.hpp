// The routing policies' knobs as command-line flags, declared once for lanes-router and for
// lanes-bench simulate (which replays the same policies offline), with their validation.
#pragma once

#include "common/config_util.hpp"
#include "router/policies/factory.hpp"

#include <string>
#include <vector>

namespace lanes::router {

// Registers every knob of `o` (load, index, prefix, kv_aware, session) on `f`.
void add_policy_flags(common::flag_set& f, policy_options& o);
// Appends one message per knob out of its range to `errors`.
void check_policy_options(const policy_options& o, std::vector<std::string>& errors);

} // namespace lanes::router
