#include "replica/backends/sim_cost_model.hpp"

#include <algorithm>

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

} // namespace lanes::replica
