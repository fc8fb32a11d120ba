// The one factory: maps a policy name to a policy built with its knobs. Config validation uses it
// too, so an unknown name fails before anything listens.
#pragma once

#include "router/index/precise_index.hpp"

#include "router/index/prefix_index.hpp"
#include "router/policies/kv_aware.hpp"
#include "router/policies/load.hpp"
#include "router/policies/prefix.hpp"
#include "router/policies/session.hpp"

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::router {

struct policy_options {
    std::uint64_t seed = 0x6c616e6573ULL;
    clock_fn clock = [] { return std::chrono::steady_clock::now(); };
    load_knobs load;
    index_knobs index;
    prefix_knobs prefix;
    kv_aware_knobs kv_aware;
    session_knobs session;
    // The replicas' own word on what they hold (KV events), where they publish it; null: none.
    std::shared_ptr<precise_index> precise;
};

// nullptr for an unknown name.
std::unique_ptr<policy> make_policy(std::string_view name, const policy_options& options);
// Whether the policy `name` routes on the replicas' KV events (policy_options::precise).
bool policy_reads_kv_events(std::string_view name);
// Every name make_policy accepts, in the order messages and --help list them.
const std::vector<std::string>& policy_names();

} // namespace lanes::router
