#include "replica/backends/backend.hpp"

#include "replica/backends/cpu_backend.hpp"
#include "replica/backends/sim_backend.hpp"

#if LANES_HAVE_CUDA
#include "replica/backends/cuda/cuda_backend.hpp"
#include "replica/backends/cuda/cuda_probe.hpp"
#endif

#include <cblas.h>

namespace lanes::replica {

#if LANES_HAVE_CUDA
bool cuda_available(std::string* why) {
    return cuda_device_usable(why);
}
#else
bool cuda_available(std::string* why) {
    if (why)
        *why = "this build has no CUDA (LANES_CUDA was off or nvcc was not found)";
    return false;
}
#endif

std::unique_ptr<backend> make_backend(const backend_options& options, const model_weights& weights,
                                      std::string& error) {
    if (options.kind == "cpu") {
        openblas_set_num_threads(static_cast<int>(options.cpu_threads));
        return std::make_unique<cpu_backend>(weights, options.num_blocks, options.block_size);
    }
    if (options.kind == "sim")
        return std::make_unique<sim_backend>(options.sim, options.num_blocks * options.block_size);
    if (options.kind == "cuda") {
        std::string why;
        if (!cuda_available(&why)) {
            error = "--backend cuda: " + why;
            return nullptr;
        }
#if LANES_HAVE_CUDA
        return make_cuda_backend(options, weights, error);
#endif
    }
    error = "unknown backend '" + options.kind + "'";
    return nullptr;
}

} // namespace lanes::replica
