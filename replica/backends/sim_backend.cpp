#include "replica/backends/sim_backend.hpp"

#include <algorithm>
#include <thread>

namespace lanes::replica {

std::chrono::duration<double, std::milli> sim_cost_model::step_time(std::size_t prefill_tokens,
                                                                    std::size_t decode_seqs,
                                                                    double kv_fraction) const {
    double ms = 0.0;
    if (prefill_tokens > 0) {
        const auto t = static_cast<double>(prefill_tokens);
        ms += prefill_a * t * t + prefill_b * t + prefill_c;
    }
    if (decode_seqs > 0) {
        const double p = std::clamp(kv_fraction, 0.0, 1.0);
        ms += std::max(1.0, decode_d * p * p + decode_e * p + decode_f);
    }
    return std::chrono::duration<double, std::milli>(ms / std::max(speedup, 1e-9));
}

sim_backend::sim_backend(sim_cost_model model, std::size_t kv_capacity_tokens)
    : model_(model)
    , capacity_(std::max<std::size_t>(kv_capacity_tokens, 1)) {}

bool sim_backend::forward(std::span<const batch_entry> batch, std::vector<std::vector<float>>&) {
    std::size_t prefill = 0, decodes = 0, active = 0;
    for (const auto& e : batch) {
        if (e.tokens.size() == 1 && e.want_logits && e.start_pos > 0)
            ++decodes;
        else
            prefill += e.tokens.size();
        active += e.start_pos + e.tokens.size();
    }
    const double fraction = static_cast<double>(active) / static_cast<double>(capacity_);
    std::this_thread::sleep_for(model_.step_time(prefill, decodes, fraction));
    return false;
}

} // namespace lanes::replica
