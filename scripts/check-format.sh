#!/usr/bin/env bash
# Fails when any C++/CUDA source differs from .clang-format. Prints the files to fix.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
    echo "clang-format not found (scripts/install-deps.sh installs it)" >&2
    exit 1
fi
mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.cpp' '*.hpp' '*.cu' '*.cuh' 2>/dev/null ||
    find common router replica bench tests -name '*.[ch]pp' -o -name '*.cu' -o -name '*.cuh')
bad=()
for f in "${files[@]}"; do
    [ -f "$f" ] || continue
    clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if [ ${#bad[@]} -gt 0 ]; then
    echo "not formatted (run: clang-format -i FILE):"
    printf '  %s\n' "${bad[@]}"
    exit 1
fi
echo "format ok: ${#files[@]} files"
