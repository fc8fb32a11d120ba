// Whether a CUDA device is usable, asked of the CUDA runtime. Compiled only when LANES_CUDA is
// on; otherwise backend.cpp answers that the build has no CUDA.
#include "replica/backends/cuda/cuda_probe.hpp"

#include <cuda_runtime.h>

#include <string>

namespace lanes::replica {

bool cuda_device_usable(std::string* why) {
    int count = 0;
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
        if (why)
            *why = std::string("no usable CUDA device: ") + cudaGetErrorString(err);
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

} // namespace lanes::replica
