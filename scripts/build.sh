#!/usr/bin/env bash
# Configures (once) and builds lanes into build/. With CI=true warnings are errors.
# Extra arguments go to CMake's configure step, e.g. -DLANES_SANITIZE=ON.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${LANES_BUILD_DIR:-build}"
werror=OFF
[ "${CI:-}" = "true" ] && werror=ON
if [ ! -f "$build_dir/build.ninja" ] || [ $# -gt 0 ] || [ "${CI:-}" = "true" ]; then
    cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DLANES_WERROR="$werror" "$@" >/dev/null
fi
cmake --build "$build_dir"
