#include "replica/backends/cuda/cuda_profile.hpp"

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace lanes::replica::cuda {

step_profile::step_profile() {
    const char* flag = std::getenv("LANES_CUDA_PROFILE");
    enabled_ = flag != nullptr && std::string_view(flag) == "1";
}

step_profile::~step_profile() {
    for (auto e : events_)
        cudaEventDestroy(e);
}

void step_profile::mark(const char* name, cudaStream_t stream) {
    if (!enabled_ || capturing_)
        return;
    if (used_ == events_.size()) {
        cudaEvent_t e = nullptr;
        if (cudaEventCreate(&e) != cudaSuccess) {
            enabled_ = false; // a diagnostic: give up rather than fail the step
            return;
        }
        events_.push_back(e);
        names_.push_back(nullptr);
    }
    names_[used_] = name;
    if (cudaEventRecord(events_[used_], stream) == cudaSuccess)
        ++used_;
}

void step_profile::begin_step(cudaStream_t stream) {
    if (!enabled_)
        return;
    used_ = 0;
    call_start_ = clock::now();
    mark("(start)", stream);
}

void step_profile::end_step(const char* kind, int rows) {
    if (!enabled_)
        return;
    const auto now = clock::now();
    const std::string label = std::string(kind) + " rows " + std::to_string(rows);
    auto& k = kinds_[label];
    ++k.steps;
    k.host_ms += std::chrono::duration<double, std::milli>(now - call_start_).count();
    if (last_end_.time_since_epoch().count() != 0)
        k.gap_ms += std::chrono::duration<double, std::milli>(call_start_ - last_end_).count();
    last_end_ = now;
    float ms = 0;
    if (used_ >= 2 && cudaEventElapsedTime(&ms, events_[0], events_[used_ - 1]) == cudaSuccess)
        k.gpu_ms += ms;
    for (std::size_t i = 1; i < used_; ++i) {
        if (cudaEventElapsedTime(&ms, events_[i - 1], events_[i]) != cudaSuccess)
            continue;
        auto& op = ops_[label + " " + names_[i]];
        op.first += ms;
        ++op.second;
    }
}

void step_profile::report() const {
    if (!enabled_)
        return;
    std::fprintf(stderr, "cuda profile: kind, steps, mean GPU ms, mean forward() ms, "
                         "mean ms between forward() calls\n");
    for (const auto& [name, k] : kinds_)
        std::fprintf(stderr, "cuda profile: %s, %ld, %.4f, %.4f, %.4f\n", name.c_str(), k.steps,
                     k.gpu_ms / static_cast<double>(k.steps),
                     k.host_ms / static_cast<double>(k.steps),
                     k.steps > 1 ? k.gap_ms / static_cast<double>(k.steps - 1) : 0.0);
    std::fprintf(stderr, "cuda profile: operation, count, mean GPU us, total GPU ms\n");
    for (const auto& [name, op] : ops_)
        std::fprintf(stderr, "cuda profile: %s, %ld, %.2f, %.3f\n", name.c_str(), op.second,
                     1e3 * op.first / static_cast<double>(op.second), op.first);
}

} // namespace lanes::replica::cuda
