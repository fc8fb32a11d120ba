#!/usr/bin/env bash
# Where a decode step's time goes, on one GPU machine: lanes-engine-bench --backend cuda with
# LANES_CUDA_PROFILE=1 (CUDA events after every operation of eagerly run steps; GPU and host time
# per step for graph replays), for each preset with graphs off (per-operation times) and on (the
# step as it really runs).
# Writes $OUT/profile_PRESET.txt (default OUT=results/gpu). Uses the build folder's binaries
# (LANES_GPU_BUILD_DIR, default build-gpu; its lib/ goes on LD_LIBRARY_PATH).
#   bench/scripts/gpu/profile.sh [PRESET...]        (default: base 1b)
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-results/gpu}"
build="${LANES_GPU_BUILD_DIR:-build-gpu}"
mkdir -p "$out"
[ -d "$build/lib" ] && export LD_LIBRARY_PATH="$PWD/$build/lib:${LD_LIBRARY_PATH:-}"
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64"
for preset in ${*:-base 1b}; do
    f="$out/profile_$preset.txt"
    : >"$f"
    for graphs in false true; do
        echo "=== $preset, cuda graphs $graphs" >>"$f"
        LANES_CUDA_PROFILE=1 timeout 120 "$build/bench/lanes-engine-bench" \
            --backend cuda --preset "$preset" --kv-blocks 4096 --max-num-seqs 64 \
            --max-num-batched-tokens 4096 --batches 1,8,64 --decode-tokens 64 \
            --decode-prompt-len 32 --prompt-len 4096 --cached-len 3840 --repeats 1 \
            --cuda-graphs "$graphs" 2>&1 |
            grep -E '^cuda profile|"batch"|_s"|"speedup"|rror|lanes-engine-bench' >>"$f"
    done
    echo "profile.sh: $preset done"
done
