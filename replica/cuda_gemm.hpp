// The CUDA backend's projections: row-major y[rows][out] (fp32) = x[rows][in] · w[in][out] +
// beta · y, x and w in the storage dtype, fp32 accumulation. By default through cublasGemmEx;
// for the shapes of decode steps (tune()), through whichever cuBLASLt algorithm measured fastest
// on this GPU, cublasGemmEx's own choice included. cuBLAS's heuristic picks kernels for these
// skinny products (one to 256 rows) that leave much of the GPU idle; timing a dozen candidates
// (each heuristic algorithm, and with its K split 2 to 16 ways) once at start-up costs well under a
// second. Private to the CUDA backend (cuda_backend.cpp); the header names no CUDA type.
#pragma once

#include <cstddef>
#include <memory>

namespace lanes::replica::cuda {

struct gemm_tuning_report {
    int shapes = 0;        // shapes timed
    int tuned = 0;         // of which a cuBLASLt algorithm beat cublasGemmEx
    double default_us = 0; // sum over the shapes of cublasGemmEx's time
    double tuned_us = 0;   // sum of the time of what each shape now runs
};

class gemm_runner {
public:
    // `blas` is the backend's cublasHandle_t and `stream` its cudaStream_t (as void*, so this
    // header needs no CUDA include); `fp32` selects fp32 inputs, else bf16.
    gemm_runner(void* blas, void* stream, bool fp32, void* workspace, std::size_t workspace_bytes);
    ~gemm_runner();
    gemm_runner(const gemm_runner&) = delete;
    gemm_runner& operator=(const gemm_runner&) = delete;

    // Enqueues the product on the stream (capturable into a CUDA graph).
    void run(const void* x, const void* w, float* y, int rows, int in, int out, float beta);
    // Times the candidates for this shape on these buffers (y is overwritten) and keeps the
    // fastest for later run() calls of the same shape. Synchronises the stream; not while
    // capturing.
    void tune(const void* x, const void* w, float* y, int rows, int in, int out);
    const gemm_tuning_report& report() const;

private:
    struct impl;
    std::unique_ptr<impl> impl_;
};

} // namespace lanes::replica::cuda
