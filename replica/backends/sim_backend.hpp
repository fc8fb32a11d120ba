// The sim backend: no model math. Each step sleeps for the time the cost model gives
// (sim_cost_model.hpp), so scheduling, KV blocks and prefix caching stay real while the
// GPU is simulated. Results obtained with it are always labelled "sim".
#pragma once

#include "replica/backends/backend.hpp"

namespace lanes::replica {

// The modelled duration of one step over `batch` (a chunk of one token at a position past 0, whose
// logits are wanted, is a decode; anything else is prefill), for a KV pool of `capacity_tokens`.
// The offline simulator (lanes-bench simulate) steps its replicas by the same arithmetic.
std::chrono::duration<double, std::milli> sim_step_time(const sim_cost_model& model,
                                                        std::span<const batch_entry> batch,
                                                        std::size_t capacity_tokens);

class sim_backend final : public backend {
public:
    sim_backend(sim_cost_model model, std::size_t kv_capacity_tokens);

    std::string_view name() const override { return "sim"; }
    bool forward(std::span<const batch_entry> batch,
                 std::vector<std::vector<float>>& logits) override;

private:
    sim_cost_model model_;
    std::size_t capacity_;
};

} // namespace lanes::replica
