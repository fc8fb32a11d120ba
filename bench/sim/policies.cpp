#include "bench/sim/lanes_policy.hpp"
#include "bench/sim/peers/dynamo_kv.hpp"
#include "bench/sim/peers/kubeai_chwbl.hpp"
#include "bench/sim/peers/llmd_scorer.hpp"
#include "bench/sim/peers/power_of_two.hpp"
#include "bench/sim/peers/prodstack_prefixaware.hpp"
#include "bench/sim/peers/sglang_cache_aware.hpp"
#include "bench/sim/peers/sglang_prefix_hash.hpp"
#include "router/policies/factory.hpp"

namespace lanes::bench::sim {

const std::vector<std::string>& peer_names() {
    static const std::vector<std::string> names{
        "sglang_cache_aware", "sglang_prefix_hash",    "kubeai_chwbl", "llmd_scorer",
        "dynamo_kv",          "prodstack_prefixaware", "power_of_two"};
    return names;
}

bool reads_kv_events(std::string_view name) {
    return name == "prefix" || name == "kv_aware" || name == "dynamo_kv";
}

std::unique_ptr<sim_policy> make_sim_policy(std::string_view name, const sim_policy_options& o) {
    if (name == "sglang_cache_aware")
        return std::make_unique<sglang_cache_aware>();
    if (name == "sglang_prefix_hash")
        return std::make_unique<sglang_prefix_hash>();
    if (name == "kubeai_chwbl")
        return std::make_unique<kubeai_chwbl>();
    if (name == "llmd_scorer")
        return std::make_unique<llmd_scorer>(o.seed);
    if (name == "dynamo_kv") {
        dynamo_kv_knobs k;
        k.events = o.kv_events;
        return std::make_unique<dynamo_kv>(o.seed, o.block_size, std::move(k));
    }
    if (name == "prodstack_prefixaware")
        return std::make_unique<prodstack_prefixaware>(o.seed);
    if (name == "power_of_two")
        return std::make_unique<power_of_two>(o.seed);
    router::policy_options lanes = o.lanes;
    lanes.precise = o.kv_events;
    auto p = router::make_policy(name, lanes);
    if (!p)
        return nullptr;
    return std::make_unique<lanes_policy>(std::move(p));
}

} // namespace lanes::bench::sim
