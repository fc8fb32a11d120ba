#include "replica/backends/sim_cost_model.hpp"

#include <algorithm>

namespace lanes::replica {

std::chrono::duration<double, std::milli> sim_cost_model::step_time(std::size_t prefill_tokens,
                                                                    std::size_t decode_seqs,
                                                                    double kv_fraction) const {
    const double k = static_cast<double>(std::max<std::size_t>(tp, 1));
    double ms = 0.0;
    if (prefill_tokens > 0) {
        const auto t = static_cast<double>(prefill_tokens);
        ms += (prefill_a * t * t + prefill_b * t) / k + prefill_c;
    }
    if (decode_seqs > 0) {
        const double p = std::clamp(kv_fraction, 0.0, 1.0);
        ms += std::max(1.0, decode_d * p * p + decode_e * p + decode_f / k);
    }
    if (tp > 1 && prefill_tokens + decode_seqs > 0) {
        const double bytes = static_cast<double>(prefill_tokens + decode_seqs) *
                             static_cast<double>(tp_hidden) * tp_act_bytes;
        const double moved = 2.0 * (k - 1.0) / k * bytes;
        const double one = tp_link_latency_us / 1000.0 + moved / (tp_link_gb_per_s * 1e9) * 1000.0;
        ms += 2.0 * static_cast<double>(tp_layers) * one;
    }
    return std::chrono::duration<double, std::milli>(ms / std::max(speedup, 1e-9));
}

} // namespace lanes::replica
