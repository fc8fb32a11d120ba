#!/usr/bin/env bash
# One sanitizer tier of CI: builds lanes with clang into its own folder and runs the unit and
# integration tests there (and, for address, the fuzz targets: LANES_FUZZ_SECONDS, 140, shared
# among them).
#   scripts/sanitize.sh address   AddressSanitizer + UndefinedBehaviorSanitizer, build-asan/
#   scripts/sanitize.sh thread    ThreadSanitizer (routers with 4 I/O threads), build-tsan/
# Time limits in the tests are scaled (tests/time_scale.hpp); the CUDA backend is left out.
set -euo pipefail
cd "$(dirname "$0")/.."
tier=${1:?usage: scripts/sanitize.sh address|thread}
case "$tier" in
address) dir=build-asan fuzz=ON ;;
thread) dir=build-tsan fuzz=OFF ;;
*) echo "unknown tier '$tier'" >&2; exit 2 ;;
esac
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
CC=clang-14 CXX=clang++-14 cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" -DLANES_SANITIZE="$tier" -DLANES_FUZZ="$fuzz" \
    -DLANES_CUDA=OFF -DLANES_WERROR="$werror" \
    -DLANES_FUZZ_SECONDS="${LANES_FUZZ_SECONDS:-140}" >/dev/null
start=$SECONDS
cmake --build "$dir"
echo "== $tier: built in $((SECONDS - start)) s"
root=$PWD
cd "$dir"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:strict_string_checks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tests/tsan.supp}
[ "$tier" = thread ] && export LANES_TEST_ROUTER_THREADS=4
# Not here: the format, docs and deploy checks (the plain tier runs them) and GPU cases.
ctest --output-on-failure --timeout 900 -E '^(format|docs|gpu|lint|deploy):' "${@:2}"
