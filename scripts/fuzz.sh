#!/usr/bin/env bash
# Runs every libFuzzer target for FUZZ_SECONDS (600) each, one after the other, from the seed
# corpora in tests/fuzz/corpus/ (grown in build-asan/tests/fuzz/corpus/), and prints each one's
# executions per second and result as a table row for docs/reliability.md. Builds build-asan
# (clang, AddressSanitizer + UndefinedBehaviorSanitizer, the fuzz targets) when needed.
#   FUZZ_SECONDS (600), FUZZ_RSS_MB (1024), FUZZ_TARGETS (all: request_head response
#   body_readers prom sse url kv_events safetensors)
# MINIMIZE=1 instead cuts each committed corpus to its named seeds plus the fewest inputs that
# keep its coverage (libFuzzer's -set_cover_merge=1), fuzzing nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${FUZZ_SECONDS:-600}
rss=${FUZZ_RSS_MB:-1024}
targets=${FUZZ_TARGETS:-request_head response body_readers prom sse url kv_events safetensors}
CC=clang-14 CXX=clang++-14 cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" -DLANES_SANITIZE=address -DLANES_FUZZ=ON \
    -DLANES_CUDA=OFF >/dev/null
cmake --build build-asan --target $(printf "fuzz_%s " $targets) >&2
if [ "${MINIMIZE:-0}" = 1 ]; then
    for t in $targets; do
        kept=$(mktemp -d)
        # Named seeds (and found-* regressions) stay; libFuzzer's outputs are named by hash.
        find "tests/fuzz/corpus/$t" -type f -regextype posix-extended \
            ! -regex '.*/[0-9a-f]{40}' -exec cp {} "$kept" \;
        ASAN_OPTIONS=detect_leaks=0 "build-asan/tests/fuzz/fuzz_$t" -set_cover_merge=1 \
            -rss_limit_mb="$rss" "$kept" "tests/fuzz/corpus/$t" 2>/dev/null
        echo "$t: $(ls "tests/fuzz/corpus/$t" | wc -l) -> $(ls "$kept" | wc -l) inputs"
        rm -rf "tests/fuzz/corpus/$t"
        mv "$kept" "tests/fuzz/corpus/$t"
        chmod 755 "tests/fuzz/corpus/$t"
    done
    exit 0
fi
echo "| target | seconds | executions | exec/s | corpus | peak RSS MB | result |"
echo "|---|---|---|---|---|---|---|"
failed=0
for t in $targets; do
    log=$(mktemp)
    result=ok
    tests/fuzz/run_target.sh "$PWD/build-asan/tests/fuzz/fuzz_$t" "$PWD/tests/fuzz/corpus/$t" \
        "$PWD/build-asan/tests/fuzz/corpus/$t" "$seconds" "$rss" >"$log" 2>&1 || result=FAILED
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
    rate=$(grep -o 'stat::average_exec_per_sec: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
    peak=$(grep -o 'stat::peak_rss_mb: *[0-9]*' "$log" | grep -o '[0-9]*$' || echo 0)
    corpus=$(ls "build-asan/tests/fuzz/corpus/$t" | wc -l)
    echo "| $t | $seconds | $execs | $rate | $corpus | $peak | $result |"
    if [ "$result" != ok ]; then
        failed=1
        grep -E 'ERROR|SUMMARY|crash-|oom-|timeout-' "$log" | head -5 >&2
    fi
    rm -f "$log"
done
exit "$failed"
