#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs the whole suite (unit tests,
# integration tests with real processes on loopback, the clang-format check) through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
start=$SECONDS
# Configured again with the suite on: a build folder the run command made before Catch2 was
# installed has none.
scripts/build.sh -DLANES_BUILD_TESTS=ON
echo "== built in $((SECONDS - start)) s"
cd "${LANES_BUILD_DIR:-build}"
ctest --output-on-failure --timeout 600 "$@"
