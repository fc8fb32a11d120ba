// vLLM production-stack's prefixaware routing logic (vllm-project/production-stack,
// src/vllm_router/routers/routing_logic.py and src/vllm_router/prefix/hashtrie.py), as a
// simulator baseline: the prompt cut into 128-character chunks (the last one may be shorter),
// each chunk's node keyed by a chained xxhash64; a node remembers every endpoint whose requests
// passed through it, and nothing is ever evicted. The longest chunk path held by some available
// endpoint wins, ties at random; with no chunk matched (its --prefix-min-match-length 0), the
// endpoint with the lowest router-observed QPS (a 60 s window) takes it. Then the prompt is
// inserted under the chosen endpoint.
#pragma once

#include "bench/sim/sim_policy.hpp"

#include <deque>
#include <random>
#include <unordered_map>

namespace lanes::bench::sim {

struct prodstack_prefixaware_knobs {
    std::size_t chunk_chars = 128;
    double qps_window_s = 60; // --request-stats-window
};

class prodstack_prefixaware final : public sim_policy {
public:
    explicit prodstack_prefixaware(std::uint64_t seed, prodstack_prefixaware_knobs k = {})
        : knobs_(k)
        , rng_(seed) {}
    std::string_view name() const override { return "prodstack_prefixaware"; }
    std::size_t pick(const sim_request& req, const router::pool_snapshot& pool,
                     double now) override;
    void on_routed(const sim_request& req, std::size_t replica, double now) override;
    std::string_view last_reason() const override { return reason_; }

    std::vector<std::uint64_t> chunks(std::string_view text) const;
    std::size_t trie_nodes() const { return trie_.size(); }

private:
    double qps(std::size_t endpoint, double now);

    prodstack_prefixaware_knobs knobs_;
    std::mt19937_64 rng_;
    std::unordered_map<std::uint64_t, std::vector<char>> trie_; // chunk path -> endpoints
    std::vector<std::deque<double>> arrivals_;                  // per endpoint, within the window
    std::vector<std::uint64_t> pending_;
    std::string_view reason_;
};

} // namespace lanes::bench::sim
