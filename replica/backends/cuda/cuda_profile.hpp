// A diagnostic of the CUDA backend, off unless LANES_CUDA_PROFILE=1 is in the environment: every
// eagerly run step records a CUDA event after each operation and adds each operation's GPU time
// to its total, and every step's GPU time (events around it) and host time (the forward call,
// and the engine's time between calls) are summed by kind; the totals are printed to stderr when
// the backend goes. Graph replays carry no per-operation events, so per-operation figures need
// --cuda-graphs false (bench/scripts/gpu/profile.sh runs both). Private to cuda_backend.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <chrono>
#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace lanes::replica::cuda {

class step_profile {
public:
    step_profile();
    ~step_profile();
    step_profile(const step_profile&) = delete;
    step_profile& operator=(const step_profile&) = delete;

    // Marks the end of operation `name` (a literal) on the stream; nothing while a graph is
    // being captured.
    void mark(const char* name, cudaStream_t stream);
    void set_capturing(bool on) { capturing_ = on; }
    void begin_step(cudaStream_t stream);
    // After the step's synchronisation: adds up its marks under "`kind` rows `rows`".
    void end_step(const char* kind, int rows);
    void report() const;

private:
    using clock = std::chrono::steady_clock;
    struct kind_totals {
        long steps = 0;
        double gpu_ms = 0, host_ms = 0, gap_ms = 0;
    };
    bool enabled_ = false;
    bool capturing_ = false;
    std::vector<cudaEvent_t> events_;
    std::vector<const char*> names_;
    std::size_t used_ = 0;
    clock::time_point call_start_{}, last_end_{};
    std::map<std::string, kind_totals> kinds_;
    std::map<std::string, std::pair<double, long>> ops_;
};

} // namespace lanes::replica::cuda
