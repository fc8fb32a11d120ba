// Device helpers shared by the CUDA backend's kernels: loads and stores in either storage dtype
// (values are fp32 in registers) and warp reductions.
#pragma once

#include <cuda_bf16.h>

namespace lanes::replica::cuda::device {

constexpr unsigned full_mask = 0xffffffffu;

__device__ __forceinline__ float load(const float* p) {
    return *p;
}
__device__ __forceinline__ float load(const __nv_bfloat16* p) {
    return __bfloat162float(*p);
}
__device__ __forceinline__ void store(float* p, float v) {
    *p = v;
}
__device__ __forceinline__ void store(__nv_bfloat16* p, float v) {
    *p = __float2bfloat16_rn(v);
}

__device__ __forceinline__ float warp_max(float v) {
    for (int o = 16; o > 0; o >>= 1)
        v = fmaxf(v, __shfl_xor_sync(full_mask, v, o));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int o = 16; o > 0; o >>= 1)
        v += __shfl_xor_sync(full_mask, v, o);
    return v;
}

} // namespace lanes::replica::cuda::device
