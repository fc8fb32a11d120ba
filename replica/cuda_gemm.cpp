#include "replica/cuda_gemm.hpp"

#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <map>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

namespace lanes::replica::cuda {

namespace {

void check(cublasStatus_t status, const char* what) {
    if (status != CUBLAS_STATUS_SUCCESS)
        throw std::runtime_error(std::string(what) + ": " + cublasGetStatusString(status));
}

void check(cudaError_t status, const char* what) {
    if (status != cudaSuccess)
        throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

// Timing: warm-up runs, then the mean of timed runs, in µs.
constexpr int warm_runs = 1;
constexpr int timed_runs = 3;
// Candidates per shape: the heuristic's best few, each also with its K split this many ways.
constexpr int heuristic_algos = 6;
constexpr std::uint32_t k_splits[] = {2, 4, 8, 16};
// An algorithm replaces cublasGemmEx only when at least this much faster (timing noise).
constexpr double min_gain = 0.03;

} // namespace

struct gemm_runner::impl {
    cublasHandle_t blas = nullptr;
    cudaStream_t stream = nullptr;
    cudaDataType_t type = CUDA_R_16BF;
    void* workspace = nullptr;
    std::size_t workspace_bytes = 0;
    cublasLtHandle_t lt = nullptr;
    // One shape's cuBLASLt description and the algorithm that won its timing.
    struct plan {
        cublasLtMatmulDesc_t desc = nullptr;
        cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
        cublasLtMatmulAlgo_t algo{};
    };
    std::map<std::tuple<int, int, int>, plan> plans; // (rows, in, out) -> a winning Lt plan
    gemm_tuning_report report;

    ~impl() {
        for (auto& [shape, p] : plans)
            release(p);
        if (lt)
            cublasLtDestroy(lt);
    }

    static void release(plan& p) {
        if (p.a)
            cublasLtMatrixLayoutDestroy(p.a);
        if (p.b)
            cublasLtMatrixLayoutDestroy(p.b);
        if (p.c)
            cublasLtMatrixLayoutDestroy(p.c);
        if (p.desc)
            cublasLtMatmulDescDestroy(p.desc);
        p = plan{};
    }

    // cuBLAS is column-major: y^T (out x rows) = w^T (out x in) · x^T (in x rows), no transposes.
    void gemm_ex(const void* x, const void* w, float* y, int rows, int in, int out, float beta) {
        const float alpha = 1.0f;
        check(cublasGemmEx(blas, CUBLAS_OP_N, CUBLAS_OP_N, out, rows, in, &alpha, w, type, out, x,
                           type, in, &beta, y, CUDA_R_32F, out, CUBLAS_COMPUTE_32F,
                           CUBLAS_GEMM_DEFAULT),
              "cublasGemmEx");
    }

    cublasStatus_t lt_run(const plan& p, const void* x, const void* w, float* y, float beta) {
        const float alpha = 1.0f;
        return cublasLtMatmul(lt, p.desc, &alpha, w, p.a, x, p.b, &beta, y, p.c, y, p.c, &p.algo,
                              workspace, workspace_bytes, stream);
    }

    plan describe(int rows, int in, int out) {
        plan p;
        check(cublasLtMatmulDescCreate(&p.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F),
              "cublasLtMatmulDescCreate");
        check(cublasLtMatrixLayoutCreate(&p.a, type, static_cast<std::uint64_t>(out),
                                         static_cast<std::uint64_t>(in), out),
              "cublasLtMatrixLayoutCreate");
        check(cublasLtMatrixLayoutCreate(&p.b, type, static_cast<std::uint64_t>(in),
                                         static_cast<std::uint64_t>(rows), in),
              "cublasLtMatrixLayoutCreate");
        check(cublasLtMatrixLayoutCreate(&p.c, CUDA_R_32F, static_cast<std::uint64_t>(out),
                                         static_cast<std::uint64_t>(rows), out),
              "cublasLtMatrixLayoutCreate");
        return p;
    }

    // The candidates: the heuristic's algorithms, and each with its K split where it allows it.
    std::vector<cublasLtMatmulAlgo_t> candidates(const plan& p) {
        cublasLtMatmulPreference_t pref = nullptr;
        check(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
        const std::uint64_t ws = workspace_bytes;
        cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws,
                                             sizeof(ws));
        cublasLtMatmulHeuristicResult_t found[heuristic_algos];
        int count = 0;
        const cublasStatus_t status = cublasLtMatmulAlgoGetHeuristic(
            lt, p.desc, p.a, p.b, p.c, p.c, pref, heuristic_algos, found, &count);
        cublasLtMatmulPreferenceDestroy(pref);
        std::vector<cublasLtMatmulAlgo_t> out;
        if (status != CUBLAS_STATUS_SUCCESS)
            return out;
        for (int i = 0; i < count; ++i) {
            if (found[i].state != CUBLAS_STATUS_SUCCESS)
                continue;
            out.push_back(found[i].algo);
            std::int32_t splittable = 0;
            std::size_t written = 0;
            std::uint32_t schemes = 0;
            if (cublasLtMatmulAlgoCapGetAttribute(&found[i].algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT,
                                                  &splittable, sizeof(splittable),
                                                  &written) != CUBLAS_STATUS_SUCCESS ||
                !splittable ||
                cublasLtMatmulAlgoCapGetAttribute(
                    &found[i].algo, CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK, &schemes,
                    sizeof(schemes), &written) != CUBLAS_STATUS_SUCCESS)
                continue;
            // A deterministic reduction (a workspace summed in order) where offered.
            std::uint32_t scheme = 0;
            for (const std::uint32_t s :
                 {static_cast<std::uint32_t>(CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE),
                  static_cast<std::uint32_t>(CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE)})
                if (!scheme && (schemes & s))
                    scheme = s;
            if (!scheme)
                continue;
            for (const std::uint32_t k : k_splits) {
                cublasLtMatmulAlgo_t a = found[i].algo;
                const auto splits = static_cast<std::int32_t>(k);
                cublasLtMatmulHeuristicResult_t checked{};
                if (cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                                                         &splits,
                                                         sizeof(splits)) != CUBLAS_STATUS_SUCCESS ||
                    cublasLtMatmulAlgoConfigSetAttribute(&a, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                                         &scheme,
                                                         sizeof(scheme)) != CUBLAS_STATUS_SUCCESS ||
                    cublasLtMatmulAlgoCheck(lt, p.desc, p.a, p.b, p.c, p.c, &a, &checked) !=
                        CUBLAS_STATUS_SUCCESS ||
                    checked.workspaceSize > workspace_bytes)
                    continue;
                out.push_back(a);
            }
        }
        return out;
    }

    // Mean µs of `launch` (which returns false when it could not run).
    template <typename F>
    double time(F&& launch, cudaEvent_t start, cudaEvent_t stop) {
        for (int i = 0; i < warm_runs; ++i)
            if (!launch())
                return -1;
        check(cudaEventRecord(start, stream), "cudaEventRecord");
        for (int i = 0; i < timed_runs; ++i)
            if (!launch())
                return -1;
        check(cudaEventRecord(stop, stream), "cudaEventRecord");
        check(cudaEventSynchronize(stop), "cudaEventSynchronize");
        float ms = 0;
        check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
        return 1e3 * static_cast<double>(ms) / timed_runs;
    }

    void tune(const void* x, const void* w, float* y, int rows, int in, int out) {
        const auto key = std::make_tuple(rows, in, out);
        if (plans.count(key))
            return;
        cudaEvent_t start = nullptr, stop = nullptr;
        check(cudaEventCreate(&start), "cudaEventCreate");
        check(cudaEventCreate(&stop), "cudaEventCreate");
        plan p = describe(rows, in, out);
        const double base = time(
            [&] {
                gemm_ex(x, w, y, rows, in, out, 0.0f);
                return true;
            },
            start, stop);
        double best = base;
        bool won = false;
        for (const auto& algo : candidates(p)) {
            p.algo = algo;
            const double t = time([&] { return lt_run(p, x, w, y, 0.0f) == CUBLAS_STATUS_SUCCESS; },
                                  start, stop);
            if (t > 0 && t < best * (1.0 - min_gain)) {
                best = t;
                won = true;
                plans[key] = p; // layouts shared; the winning algorithm copied
            }
        }
        (void)cudaGetLastError(); // a candidate that failed to launch leaves no sticky error
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
        ++report.shapes;
        report.default_us += base;
        report.tuned_us += best;
        if (won)
            ++report.tuned; // plans[key] holds p's layouts and the fastest algorithm
        else
            release(p);
    }
};

gemm_runner::gemm_runner(void* blas, void* stream, bool fp32, void* workspace,
                         std::size_t workspace_bytes)
    : impl_(std::make_unique<impl>()) {
    impl_->blas = static_cast<cublasHandle_t>(blas);
    impl_->stream = static_cast<cudaStream_t>(stream);
    impl_->type = fp32 ? CUDA_R_32F : CUDA_R_16BF;
    impl_->workspace = workspace;
    impl_->workspace_bytes = workspace_bytes;
    check(cublasLtCreate(&impl_->lt), "cublasLtCreate");
}

gemm_runner::~gemm_runner() = default;

void gemm_runner::run(const void* x, const void* w, float* y, int rows, int in, int out,
                      float beta) {
    const auto found = impl_->plans.find(std::make_tuple(rows, in, out));
    if (found != impl_->plans.end()) {
        check(impl_->lt_run(found->second, x, w, y, beta), "cublasLtMatmul");
        return;
    }
    impl_->gemm_ex(x, w, y, rows, in, out, beta);
}

void gemm_runner::tune(const void* x, const void* w, float* y, int rows, int in, int out) {
    impl_->tune(x, w, y, rows, in, out);
}

const gemm_tuning_report& gemm_runner::report() const {
    return impl_->report;
}

} // namespace lanes::replica::cuda
