#!/usr/bin/env bash
# Builds the GPU check's binaries where the build dependencies are (nvcc is needed, a GPU is not),
# for a GPU machine that cannot install them: bench/scripts/gpu/bench.sh and routing.sh use binaries they
# find in the build folder when their own build cannot run. Writes, under LANES_GPU_BUILD_DIR
# (build-gpu): tests/lanes_gpu_tests and bench/lanes-engine-bench (bench.sh), replica/lanes-replica,
# router/lanes-router and bench/lanes-bench (routing.sh), and lib/ with the shared libraries they
# load that are neither glibc's, the compiler runtime's nor CUDA's (OpenBLAS, xxHash, simdjson,
# mimalloc, gfortran...), which both scripts put on LD_LIBRARY_PATH.
# Copy those six paths (not the rest of the build folder) to the GPU machine's checkout.
set -euo pipefail
cd "$(dirname "$0")/../../.."
build="${LANES_GPU_BUILD_DIR:-build-gpu}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLANES_CUDA=ON >/dev/null
cmake --build "$build" -j"${JOBS:-$(nproc)}" --target lanes_gpu_tests lanes-engine-bench \
    lanes-replica lanes-router lanes-bench
mkdir -p "$build/lib"
bins=("$build/tests/lanes_gpu_tests" "$build/bench/lanes-engine-bench"
    "$build/bench/lanes-make-checkpoint" "$build/replica/lanes-replica"
    "$build/router/lanes-router" "$build/bench/lanes-bench")
for bin in "${bins[@]}"; do
    ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' |
        grep -Ev '/(libc|libm|libdl|libpthread|librt|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so|/cuda' |
        xargs -r cp -L -t "$build/lib"
done
du -sh "${bins[@]}" "$build/lib"
