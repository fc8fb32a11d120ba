#include "bench/sim/decision_log.hpp"

#include "common/prompt/tokenizer.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>

namespace lanes::bench::sim {

decision_log::decision_log(std::size_t requests, bool per_request) {
    if (per_request)
        entries_.resize(requests);
}

void decision_log::record(std::size_t id, const std::string& prompt, std::size_t chosen,
                          const std::vector<std::unique_ptr<sim_replica>>& replicas,
                          std::size_t block_size, std::int64_t inflight, std::string_view reason) {
    const auto it = reasons_.find(reason);
    if (it == reasons_.end())
        reasons_.emplace(std::string(reason), 1);
    else
        ++it->second;
    hashes_.clear();
    const auto tokens = common::encode_prompt(prompt);
    common::extend_block_hashes(hashes_, tokens, block_size, common::root_block_hash);
    std::size_t best = 0;
    for (const auto& rep : replicas)
        best = std::max(best, rep->cached_blocks(hashes_));
    const std::size_t got = replicas[chosen]->cached_blocks(hashes_);
    held_chosen_ += static_cast<double>(got);
    held_best_ += static_cast<double>(best);
    if (best > 0 && best >= 2 * got)
        ++passed_over_;
    if (id < entries_.size())
        entries_[id] = {got, best, inflight, std::string(reason)};
}

nlohmann::json decision_log::cache_at_decision() const {
    return {{"held_by_chosen_blocks", held_chosen_},
            {"held_best_blocks", held_best_},
            {"share_of_best", held_best_ > 0 ? held_chosen_ / held_best_ : 1.0},
            {"passed_over", passed_over_}};
}

nlohmann::json decision_log::reasons() const {
    return reasons_;
}

void decision_log::add_row_fields(std::size_t id, nlohmann::json& row) const {
    if (id >= entries_.size())
        return;
    const entry& e = entries_[id];
    row["held_blocks"] = e.held;
    row["best_held_blocks"] = e.best;
    row["inflight_before"] = e.inflight;
    row["reason"] = e.reason;
}

} // namespace lanes::bench::sim
