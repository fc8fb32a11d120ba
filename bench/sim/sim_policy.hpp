// How the offline simulator asks a router where a request goes. lanes' own policies are driven
// through the live router's interface (router/policies/policy.hpp) by an adapter, exactly as
// router/proxy/dispatcher.cpp drives them; the peers' algorithms (bench/sim/peers/) implement this
// interface directly, because some of them read what the live interface does not carry (the
// prompt's text, the moment a request's prefill ends). Peers are baselines for the simulator
// only: the live router keeps its own policies.
#pragma once

#include "common/prompt/block_hash.hpp"
#include "router/policies/factory.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::bench::sim {

struct sim_request {
    std::uint64_t id = 0;
    std::string_view text; // the prompt as sent (byte tokens: one character is one token)
    // The live router's hashes of it: 16-byte blocks of BOS + text under the router's root.
    std::span<const common::block_hash> blocks;
    std::size_t prompt_tokens = 0; // BOS included
    std::optional<router::session_ref> session;
};

class sim_policy {
public:
    virtual ~sim_policy() = default;
    virtual std::string_view name() const = 0;
    // `pool` as the live router builds it: routable replicas, the router's own in-flight count,
    // the last scrape's load when fresh; `now` in virtual seconds. Returns an index into
    // pool.replicas (every replica is healthy in the simulator, so there always is one).
    virtual std::size_t pick(const sim_request& req, const router::pool_snapshot& pool,
                             double now) = 0;
    virtual void on_routed(const sim_request&, std::size_t /*replica*/, double /*now*/) {}
    virtual void on_first_token(const sim_request&, std::size_t /*replica*/, double /*now*/) {}
    virtual void on_done(const sim_request&, std::size_t /*replica*/, double /*now*/) {}
    // The route reason of the last pick, for the report's counts.
    virtual std::string_view last_reason() const { return {}; }
    // The load-scrape period this router ships with; nullopt: the simulation's own setting
    // (lanes' --scrape-interval).
    virtual std::optional<double> scrape_interval_s() const { return std::nullopt; }
};

struct sim_policy_options {
    std::uint64_t seed = 1;
    std::size_t block_size = 16; // the replicas' KV block, in tokens
    // lanes' policies: their knobs as the live router's defaults give them.
    router::policy_options lanes;
    // The replicas' KV events (the simulation's sim_config::kv_events), for the policies that
    // read them (reads_kv_events); null: none published.
    std::shared_ptr<router::precise_index> kv_events;
};

// A lanes policy (router::policy_names()) or a peer (peer_names()); nullptr for an unknown name.
std::unique_ptr<sim_policy> make_sim_policy(std::string_view name, const sim_policy_options& o);
const std::vector<std::string>& peer_names();
// Whether the policy `name` routes on the replicas' KV events where they are published (lanes'
// prefix and kv_aware, Dynamo's KV router); the others ignore them.
bool reads_kv_events(std::string_view name);

} // namespace lanes::bench::sim
