// How each routing decision of a simulated run fared against the replicas' caches at that
// instant: the prompt blocks the chosen replica held, the most any replica held, and the
// decisions that passed over a replica holding at least twice as many (a policy's memory or its
// load rule sending a prefix away from its copy); the policy's reasons; and, when asked, every
// decision's own row (the requests in flight at the chosen replica before it, its reason).
#pragma once

#include "bench/sim/sim_replica.hpp"
#include "common/prompt/block_hash.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::bench::sim {

class decision_log {
public:
    // `requests`: decisions the run will make (ids 0..requests-1); `per_request`: keep each
    // decision's row.
    decision_log(std::size_t requests, bool per_request);

    // Request `id`'s prompt went to `chosen`, which had `inflight` requests before it.
    void record(std::size_t id, const std::string& prompt, std::size_t chosen,
                const std::vector<std::unique_ptr<sim_replica>>& replicas, std::size_t block_size,
                std::int64_t inflight, std::string_view reason);

    nlohmann::json cache_at_decision() const;
    nlohmann::json reasons() const;
    // Request `id`'s decision fields (with per_request), added to `row`.
    void add_row_fields(std::size_t id, nlohmann::json& row) const;

private:
    struct entry {
        std::size_t held = 0, best = 0;
        std::int64_t inflight = 0;
        std::string reason;
    };
    std::vector<entry> entries_; // by request id, with per_request
    std::map<std::string, std::int64_t, std::less<>> reasons_;
    double held_chosen_ = 0, held_best_ = 0;
    std::int64_t passed_over_ = 0;
    std::vector<common::block_hash> hashes_; // scratch
};

} // namespace lanes::bench::sim
