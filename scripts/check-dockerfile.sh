#!/usr/bin/env bash
# The container build files in deploy/container (which cannot be built here: no image registry)
# stay buildable as far as this machine can tell: every path they COPY from the project exists,
# and the tree made of just those paths configures with the Dockerfile's CMake options.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
status=0
for file in "$root"/deploy/container/Dockerfile*; do
    # COPY lines that take from the build context (not --from=<stage>): all words but the last.
    while read -r -a words; do
        for src in "${words[@]:1:${#words[@]}-2}"; do
            if [ ! -e "$root/$src" ]; then
                echo "check-dockerfile: $(basename "$file") copies $src, which does not exist" >&2
                status=1
            else
                mkdir -p "$work/tree/$(dirname "$src")"
                cp -r "$root/$src" "$work/tree/$src"
            fi
        done
    done < <(grep -E '^COPY ' "$file" | grep -v -- '--from=')
done
[ $status -eq 0 ] || exit 1
cmake -S "$work/tree" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
    -DLANES_BUILD_TESTS=OFF -DLANES_CUDA=OFF >"$work/configure.log" 2>&1 || {
    cat "$work/configure.log" >&2
    echo "check-dockerfile: the copied tree does not configure" >&2
    exit 1
}
