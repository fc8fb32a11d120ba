#include "bench/sim/lanes_policy.hpp"
#include "bench/sim/peers/dynamo_kv.hpp"
#include "bench/sim/peers/kubeai_chwbl.hpp"
#include "bench/sim/peers/llmd_scorer.hpp"
#include "bench/sim/peers/power_of_two.hpp"
#include "bench/sim/peers/prodstack_prefixaware.hpp"
#include "bench/sim/peers/sglang_cache_aware.hpp"
#include "bench/sim/peers/sglang_prefix_hash.hpp"
#include "router/policies/factory.hpp"

#include <algorithm>
#include <array>

namespace lanes::bench::sim {

namespace {

// The peers' algorithms, each named once.
struct peer {
    std::string_view name;
    std::unique_ptr<sim_policy> (*make)(const sim_policy_options&);
    bool reads_kv_events;
};

template <class P>
std::unique_ptr<sim_policy> plain(const sim_policy_options&) {
    return std::make_unique<P>();
}

template <class P>
std::unique_ptr<sim_policy> seeded(const sim_policy_options& o) {
    return std::make_unique<P>(o.seed);
}

std::unique_ptr<sim_policy> make_dynamo(const sim_policy_options& o) {
    dynamo_kv_knobs k;
    k.events = o.kv_events;
    return std::make_unique<dynamo_kv>(o.seed, o.block_size, std::move(k));
}

constexpr std::array<peer, 7> peers{{
    {"sglang_cache_aware", plain<sglang_cache_aware>, false},
    {"sglang_prefix_hash", plain<sglang_prefix_hash>, false},
    {"kubeai_chwbl", plain<kubeai_chwbl>, false},
    {"llmd_scorer", seeded<llmd_scorer>, false},
    {"dynamo_kv", make_dynamo, true},
    {"prodstack_prefixaware", seeded<prodstack_prefixaware>, false},
    {"power_of_two", seeded<power_of_two>, false},
}};

const peer* find_peer(std::string_view name) {
    const auto it =
        std::find_if(peers.begin(), peers.end(), [&](const peer& p) { return p.name == name; });
    return it == peers.end() ? nullptr : &*it;
}

} // namespace

const std::vector<std::string>& peer_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const auto& p : peers)
            out.emplace_back(p.name);
        return out;
    }();
    return names;
}

bool reads_kv_events(std::string_view name) {
    if (const peer* p = find_peer(name))
        return p->reads_kv_events;
    return router::policy_reads_kv_events(name);
}

std::unique_ptr<sim_policy> make_sim_policy(std::string_view name, const sim_policy_options& o) {
    if (const peer* p = find_peer(name))
        return p->make(o);
    router::policy_options lanes = o.lanes;
    lanes.precise = o.kv_events;
    auto p = router::make_policy(name, lanes);
    if (!p)
        return nullptr;
    return std::make_unique<lanes_policy>(std::move(p));
}

} // namespace lanes::bench::sim
