#!/usr/bin/env bash
# The CUDA backend's check and benchmark on one GPU machine (written for an H200: 16 cores,
# CUDA 13), in one go and under 8 minutes:
#   1. GPU facts (nvidia-smi) and the build dependencies (scripts/install-deps.sh; a machine that
#      cannot reach a package mirror gets a clear list of what is missing);
#   2. a Release build with LANES_CUDA=ON (-j16) of the unit tests and lanes-engine-bench;
#   3. the [gpu] tests (lanes_gpu_tests: CUDA vs CPU parity, prefix hits, engine accounting), then
#      the direct backend tests again under compute-sanitizer's memcheck;
#   4. random-weight checkpoints of Llama-3.2-1B's and Qwen3-0.6B's shapes (bf16, tied heads, the
#      real vocabularies), written on the machine itself by lanes-make-checkpoint, then
#      lanes-engine-bench --backend cuda --model on each: decode tokens/s at batch 1, 8, 64, 256
#      with each figure's fraction of the HBM bound, prefill tokens/s, TTFT of a 4,096-token
#      prompt uncached and with 3,840 tokens (93.75 %) cached, and the checkpoint's load time;
#   5. a summary table.
# Everything goes to $OUT (default results/gpu): gpu.txt, build.log, gpu_tests.txt,
# sanitizer.txt, bench_llama-3.2-1b.json, bench_qwen3-0.6b.json, summary.md (a failed run's
# errors are in it). The checkpoints go to $CKPT (default /tmp/lanes-ckpt) and are removed.
#
# Usage, from the repository root: bench/scripts/gpu/bench.sh
# Environment: OUT (output folder), LANES_GPU_BUILD_DIR (default build-gpu; a folder that already
# holds both binaries is used as it is when the build dependencies are missing, with the shared
# libraries the machine lacks in its lib/ subfolder), LANES_GPU_PREBUILT (1: use those binaries
# without trying to install or build), JOBS (16), HBM_TB_S (4.8, the H200's HBM3e bandwidth).
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-results/gpu}"
build="${LANES_GPU_BUILD_DIR:-build-gpu}"
jobs="${JOBS:-16}"
hbm="${HBM_TB_S:-4.8}"
mkdir -p "$out"
start=$(date +%s)
say() { echo "bench.sh [$(($(date +%s) - start))s]: $*" | tee -a "$out/summary.md"; }
: >"$out/summary.md"

# --- 1. the machine ------------------------------------------------------------------------------
{
    nvidia-smi --query-gpu=name,memory.total,driver_version,clocks.max.sm,clocks.max.mem \
        --format=csv 2>&1 || echo "nvidia-smi failed"
    nvcc --version 2>&1 | tail -2 || echo "nvcc not found"
    echo "cores: $(nproc)"
    grep -E '^(PRETTY_NAME)=' /etc/os-release 2>/dev/null
} >"$out/gpu.txt"
say "GPU: $(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)"

[ -d "$build/lib" ] && export LD_LIBRARY_PATH="$PWD/$build/lib:${LD_LIBRARY_PATH:-}"
tests_bin="$build/tests/lanes_gpu_tests"
bench_bin="$build/bench/lanes-engine-bench"
ckpt_bin="$build/bench/lanes-make-checkpoint"
# With LANES_GPU_PREBUILT=1 the binaries already in $build are used as they are (no install, no
# build): for a machine known to have no package mirror, where trying costs device time.
# Otherwise the install is bounded: without a reachable mirror apt-get can wait on the network.
if [ "${LANES_GPU_PREBUILT:-0}" != 1 ] && timeout 90 scripts/install-deps.sh >"$out/build.log" 2>&1; then
    # --- 2. build --------------------------------------------------------------------------------
    say "building (Release, LANES_CUDA=ON, -j$jobs)"
    if ! { cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLANES_CUDA=ON &&
        cmake --build "$build" -j"$jobs" --target lanes_gpu_tests lanes-engine-bench \
            lanes-make-checkpoint; } \
        >>"$out/build.log" 2>&1; then
        say "FAILED: the build (see build.log)"
        exit 1
    fi
elif [ -x "$tests_bin" ] && [ -x "$bench_bin" ] && [ -x "$ckpt_bin" ]; then
    say "using the binaries in $build (LANES_GPU_PREBUILT=${LANES_GPU_PREBUILT:-0}; build.log)"
    export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64:/usr/local/cuda/lib"
    missing=$(ldd "$tests_bin" "$bench_bin" | awk '/not found/ { print $1 }' | sort -u | tr '\n' ' ')
    # CUDA's libraries may live elsewhere on the machine (a Python package's copy, say).
    for lib in $missing; do
        found=$(find /usr/local /opt /usr/lib -name "$lib" 2>/dev/null | head -1)
        [ -n "$found" ] && export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$found")"
    done
    missing=$(ldd "$tests_bin" "$bench_bin" | awk '/not found/ { print $1 }' | sort -u | tr '\n' ' ')
    echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH" >>"$out/build.log"
    ldd "$tests_bin" >>"$out/build.log" 2>&1
    if [ -n "$missing" ]; then
        say "FAILED: shared libraries not found: $missing(put them in $build/lib)"
        exit 2
    fi
else
    say "FAILED: build dependencies are missing and could not be installed (no package mirror?):"
    say "$(tail -5 "$out/build.log" | tr '\n' ' ')"
    say "Run bench/scripts/gpu/prebuild.sh where the dependencies are and bring its binaries and lib/"
    say "folder ($build), or give this machine a Debian 12 package mirror."
    exit 2
fi

# --- 3. tests ------------------------------------------------------------------------------------
status=0
say "running the [gpu] tests"
tests_rc=0
timeout 150 "$tests_bin" >"$out/gpu_tests.txt" 2>&1 || tests_rc=$?
if [ "$tests_rc" -eq 77 ]; then
    say "FAILED: the [gpu] tests were skipped: $(head -1 "$out/gpu_tests.txt")"
    exit 1
elif [ "$tests_rc" -eq 0 ]; then
    say "tests passed: $(grep -E '^(All tests|test cases)' "$out/gpu_tests.txt" | tail -1)"
else
    say "TESTS FAILED (gpu_tests.txt): $(grep -E '^test cases' "$out/gpu_tests.txt" | tail -1)"
    status=1
fi
if grep -q "graph capture failed" "$out/gpu_tests.txt"; then
    say "FAILED: CUDA graph capture (gpu_tests.txt): $(grep -m1 'graph capture failed' \
        "$out/gpu_tests.txt")"
    status=1
fi

# Out-of-bounds and race checks of the kernels on the direct backend tests (tiny and small),
# where compute-sanitizer is installed; bounded, since memcheck slows the kernels down.
sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ -x "$sanitizer" ]; then
    say "compute-sanitizer memcheck on the backend tests"
    if timeout 90 "$sanitizer" --tool memcheck --error-exitcode 3 "$tests_bin" \
        "cuda fp32*,cuda: a prefill*,cuda: decode graphs*,cuda: checkpoint*" \
        >"$out/sanitizer.txt" 2>&1; then
        say "memcheck clean: $(grep -E 'ERROR SUMMARY' "$out/sanitizer.txt" | tail -1)"
    else
        say "MEMCHECK FAILED or timed out (sanitizer.txt): $(grep -E 'ERROR SUMMARY' \
            "$out/sanitizer.txt" | tail -1)"
        status=1
    fi
fi

# --- 4. benchmarks -------------------------------------------------------------------------------
# 256 sequences x (33 + 256) tokens need 4,864 blocks; the TTFT prompt 256. 8,192 blocks of 16
# tokens: 4 GiB of bf16 KV for Llama-3.2-1B (32 KiB a token), 14 GiB for Qwen3-0.6B (112 KiB).
ckpt="${CKPT:-/tmp/lanes-ckpt}"
trap 'rm -rf "$ckpt"' EXIT
for shape in llama-3.2-1b qwen3-0.6b; do
    say "lanes-make-checkpoint --shape $shape (bf16)"
    if ! timeout 120 "$ckpt_bin" --out "$ckpt/$shape" --shape "$shape" --dtype bf16 \
        >>"$out/build.log" 2>&1; then
        say "FAILED: making the $shape checkpoint (build.log)"
        status=1
        continue
    fi
    say "lanes-engine-bench --backend cuda --model $shape"
    if ! timeout 150 "$bench_bin" --backend cuda --model "$ckpt/$shape" --cuda-dtype bf16 \
        --kv-blocks 8192 --max-num-seqs 256 --max-num-batched-tokens 4096 --max-model-len 8192 \
        --batches 1,8,64,256 --decode-tokens 256 --decode-prompt-len 32 \
        --prompt-len 4096 --cached-len 3840 --repeats 3 --hbm-tb-s "$hbm" \
        --out "$out/bench_$shape.json" >/dev/null 2>"$out/bench.err"; then
        say "FAILED: bench $shape: $(tail -3 "$out/bench.err" | tr '\n' ' ')"
        status=1
    fi
    if grep -q "graph capture failed" "$out/bench.err"; then
        say "FAILED: bench $shape ran without CUDA graphs: $(grep -m1 'graph capture failed' \
            "$out/bench.err")"
        status=1
    fi
    rm -rf "${ckpt:?}/$shape"
done
rm -f "$out/bench.err"

# --- 5. summary ----------------------------------------------------------------------------------
python3 - "$out" <<'EOF' >>"$out/summary.md" 2>&1 || say "summary failed"
import json, os, sys
out = sys.argv[1]
print("\n| model | batch | decode tok/s | HBM bound tok/s | fraction of bound |")
print("|---|---|---|---|---|")
ttft = []
for preset in ("llama-3.2-1b", "qwen3-0.6b"):
    path = os.path.join(out, f"bench_{preset}.json")
    if not os.path.exists(path):
        continue
    r = json.load(open(path))
    for d in r.get("decode", []):
        print(f"| {preset} | {d['batch']} | {d['decode_tokens_per_s']:,.0f} | "
              f"{d['bound_tokens_per_s']:,.0f} | {d['fraction_of_bound']:.2f} |")
    decode = {d["batch"]: d["decode_tokens_per_s"] for d in r.get("decode", [])}
    if 1 in decode and 256 in decode:
        print(f"\n{preset}: batch 256 / batch 1 = {decode[256] / decode[1]:.1f}x")
    t = r["ttft"]
    ttft.append(f"| {preset} | {t['prefill_tokens_per_s']:,.0f} | {t['uncached_s'] * 1e3:.1f} ms"
                f" | {t['cached_s'] * 1e3:.1f} ms | {t['speedup']:.1f}x | {r['load_s']:.1f} s |")
print("\n| model | prefill tok/s (4,096 uncached) | TTFT uncached | TTFT 93.75 % cached | speedup"
      " | load |")
print("|---|---|---|---|---|---|")
print("\n".join(ttft))
EOF
say "done in $(($(date +%s) - start)) s (status $status); results in $out"
exit "$status"
