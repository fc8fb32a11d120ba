#!/usr/bin/env bash
# Writes docs/function-sizes.txt: every function of common/, router/, replica/ and bench/ over 60
# lines (clang-tidy's readability-function-size, LineThreshold 60), longest first, with the
# count of functions over 40. CUDA kernels (.cu) are left out; so are the flag and metric tables,
# listed but marked. Needs build/compile_commands.json (scripts/build.sh writes it).
#   scripts/function-sizes.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[ -f "$build/compile_commands.json" ] || { echo "no $build/compile_commands.json" >&2; exit 1; }
out=docs/function-sizes.txt
raw=$(mktemp)
db=$(mktemp -d)
trap 'rm -rf "$raw" "$db"' EXIT
# The build's precompiled header is GCC's: clang reads its text instead, from a copy with no
# .gch beside it.
for pch in $(grep -o -- '-include [^ ]*cmake_pch.hxx' "$build/compile_commands.json" | sort -u |
    cut -d' ' -f2); do
    mkdir -p "$db$(dirname "$pch")"
    cp "$pch" "$db$pch"
done
sed -e "s#-include \([^ ]*cmake_pch.hxx\)#-include $db\1#g" -e 's#-Winvalid-pch##g' \
    "$build/compile_commands.json" >"$db/compile_commands.json"
git ls-files 'common/*.cpp' 'router/*.cpp' 'replica/*.cpp' 'bench/*.cpp' |
    grep -v '/cuda/' |
    xargs -P "$(nproc)" -n 4 clang-tidy -p "$db" --quiet \
        --checks='-*,readability-function-size' --header-filter='/(common|router|replica|bench)/' \
        --config='{CheckOptions: [{key: readability-function-size.LineThreshold, value: 40}]}' \
        2>/dev/null | grep -E 'exceeds recommended size|[0-9]+ lines including' >"$raw" || true
python3 - "$raw" "$out" <<'PY'
import re, sys
raw, out = sys.argv[1], sys.argv[2]
tables = {"make_flags", "router_metrics", "replica_metrics", "add_server_flags", "add_policy_flags",
          "make_simulate_flags", "validate", "simulate_flags"}
rows, name, where = [], None, None
for line in open(raw):
    m = re.search(r"^(\S+?):(\d+):\d+: warning: function '([^']+)' exceeds", line)
    if m:
        where, name = f"{m.group(1)}:{m.group(2)}", m.group(3)
        continue
    m = re.search(r"(\d+) lines including whitespace and comments", line)
    if m and name:
        rows.append((int(m.group(1)), name, re.sub(r"^.*?/(common|router|replica|bench)/", r"\1/", where)))
        name = None
rows = sorted(set(rows), key=lambda r: (-r[0], r[2]))
with open(out, "w") as f:
    f.write("# Functions over 60 lines (clang-tidy readability-function-size, LineThreshold 60),\n")
    f.write("# CUDA kernels aside; written by scripts/function-sizes.sh.\n")
    f.write(f"# over 40 lines: {len(rows)}; over 60: {sum(1 for r in rows if r[0] > 60)}\n")
    for n, fn, where in rows:
        if n > 60:
            short = fn.split("::")[-1].split("(")[0]
            mark = "  (a table)" if short in tables else ""
            f.write(f"{n:4d}  {fn}  {where}{mark}\n")
PY
cat "$out"
