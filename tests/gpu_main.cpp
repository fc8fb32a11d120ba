// The main of lanes_gpu_tests: the [gpu] cases run where a CUDA device is usable; elsewhere the
// program exits with gpu_skip_code, which ctest reports as skipped (SKIP_RETURN_CODE), never as
// passed. Listing the cases (test discovery at build time) needs no device.
#define CATCH_CONFIG_RUNNER
#include "replica/backends/backend.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <string_view>

namespace {
constexpr int gpu_skip_code = 77;
}

int main(int argc, char** argv) {
    bool listing = false;
    for (int i = 1; i < argc; ++i)
        listing = listing || std::string_view(argv[i]).starts_with("--list");
    std::string why;
    if (!listing && !lanes::replica::cuda_available(&why)) {
        std::printf("skipped: no usable GPU (%s)\n", why.c_str());
        return gpu_skip_code;
    }
    return Catch::Session().run(argc, argv);
}
