// Whether a CUDA device is usable and how much memory it has free, asked of the CUDA runtime.
// Compiled only when LANES_CUDA is on; otherwise backend.cpp answers that the build has no CUDA.
#include "replica/backends/cuda/cuda_probe.hpp"

#include <cuda_runtime.h>

#include <string>

#include <unistd.h>

namespace lanes::replica {

bool cuda_device_usable(std::string* why) {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        // Without the NVIDIA kernel driver the runtime says the driver is "insufficient": on a
        // machine with no GPU at all, say that instead.
        const bool no_driver = ::access("/proc/driver/nvidia/version", R_OK) != 0;
        if (why)
            *why = no_driver ? std::string("no NVIDIA GPU driver on this machine")
                             : std::string("no usable CUDA device: ") + cudaGetErrorString(err);
        return false;
    }
    if (count == 0) {
        if (why)
            *why = "no CUDA device found";
        return false;
    }
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess && why)
        *why = std::string("CUDA device 0: ") + prop.name;
    return true;
}

bool cuda_memory(std::size_t& free_bytes, std::size_t& total_bytes, std::string* why) {
    cudaError_t status = cudaSetDevice(0);
    if (status == cudaSuccess)
        status = cudaMemGetInfo(&free_bytes, &total_bytes);
    if (status != cudaSuccess) {
        if (why)
            *why = std::string("cannot read the device's memory: ") + cudaGetErrorString(status);
        return false;
    }
    return true;
}

} // namespace lanes::replica
