#include "replica/backends/sim_backend.hpp"

#include <algorithm>
#include <thread>

namespace lanes::replica {

sim_backend::sim_backend(sim_cost_model model, std::size_t kv_capacity_tokens)
    : model_(model)
    , capacity_(std::max<std::size_t>(kv_capacity_tokens, 1)) {}

std::chrono::duration<double, std::milli> sim_step_time(const sim_cost_model& model,
                                                        std::span<const batch_entry> batch,
                                                        std::size_t capacity_tokens) {
    std::size_t prefill = 0, decodes = 0, active = 0;
    for (const auto& e : batch) {
        if (e.tokens.size() == 1 && e.want_logits && e.start_pos > 0)
            ++decodes;
        else
            prefill += e.tokens.size();
        active += e.start_pos + e.tokens.size();
    }
    const double fraction = static_cast<double>(active) /
                            static_cast<double>(std::max<std::size_t>(capacity_tokens, 1));
    return model.step_time(prefill, decodes, fraction);
}

bool sim_backend::forward(std::span<const batch_entry> batch, std::vector<std::vector<float>>&) {
    std::this_thread::sleep_for(sim_step_time(model_, batch, capacity_));
    return false;
}

} // namespace lanes::replica
