// Device memory and CUDA handles owned by RAII objects, and the check that turns a CUDA or cuBLAS
// failure into an exception naming what failed.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>

namespace lanes::replica {

inline void check(cudaError_t status, const char* what) {
    if (status != cudaSuccess)
        throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

inline void check(cublasStatus_t status, const char* what) {
    if (status != CUBLAS_STATUS_SUCCESS)
        throw std::runtime_error(std::string(what) + ": " + cublasGetStatusString(status));
}

// Owns one cudaMalloc (device) or cudaMallocHost (pinned host) allocation.
template <bool pinned>
class memory {
public:
    memory() = default;
    explicit memory(std::size_t bytes)
        : size_(bytes) {
        if (bytes == 0)
            return;
        if constexpr (pinned)
            check(cudaMallocHost(&ptr_, bytes), "cudaMallocHost");
        else
            check(cudaMalloc(&ptr_, bytes), "cudaMalloc");
    }
    ~memory() { release(); }
    memory(memory&& other) noexcept
        : ptr_(std::exchange(other.ptr_, nullptr))
        , size_(std::exchange(other.size_, 0)) {}
    memory& operator=(memory&& other) noexcept {
        if (this != &other) {
            release();
            ptr_ = std::exchange(other.ptr_, nullptr);
            size_ = std::exchange(other.size_, 0);
        }
        return *this;
    }
    memory(const memory&) = delete;
    memory& operator=(const memory&) = delete;

    template <typename T = void>
    T* get() const {
        return static_cast<T*>(ptr_);
    }
    std::size_t size() const { return size_; }

private:
    void release() {
        if (!ptr_)
            return;
        if constexpr (pinned)
            cudaFreeHost(ptr_);
        else
            cudaFree(ptr_);
        ptr_ = nullptr;
    }
    void* ptr_ = nullptr;
    std::size_t size_ = 0;
};
using device_memory = memory<false>;
using pinned_memory = memory<true>;

struct stream_deleter {
    void operator()(cudaStream_t s) const { cudaStreamDestroy(s); }
};
struct cublas_deleter {
    void operator()(cublasHandle_t h) const { cublasDestroy(h); }
};
using stream_ptr = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, stream_deleter>;
using cublas_ptr = std::unique_ptr<std::remove_pointer_t<cublasHandle_t>, cublas_deleter>;

} // namespace lanes::replica
