// The CUDA backend's host-side sizes (the device tests are in cuda_backend_gpu_test.cpp).
#include "replica/backends/cuda/cuda_backend.hpp"

#include <catch2/catch.hpp>

using namespace lanes::replica;

TEST_CASE("cuda byte counts agree with the model's parameter count", "[backend]") {
    for (const char* name : {"tiny", "small", "base", "1b"}) {
        const auto c = *preset(name);
        CHECK(cuda_weight_bytes(c, 4) == c.parameter_count() * 4);
        CHECK(cuda_projection_bytes(c, 2) < cuda_weight_bytes(c, 2));
        CHECK(cuda_kv_block_bytes(c, 16, 2) == c.kv_bytes_per_token(2) * 16);
    }
    CHECK(cuda_dtype_bytes("bf16") == 2);
    CHECK(cuda_dtype_bytes("fp32") == 4);
    CHECK(cuda_dtype_bytes("fp16") == 0);
}
