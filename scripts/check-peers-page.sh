#!/usr/bin/env bash
# docs/results-peers.md is what bench/scripts/peers_report.py writes from the results it names
# (its "Results:" line): the page was not edited by hand, and the report still reads the results
# it was written from. The charts are left out (--no-charts): they need gnuplot.
set -euo pipefail
cd "$(dirname "$0")/.."
page=docs/results-peers.md
results=$(sed -n 's/^Results: `\([^`]*\)`.*/\1/p' "$page" | head -1)
if [ -z "$results" ] || [ ! -d "$results" ]; then
    echo "check-peers-page: $page names no results directory that exists ('$results')" >&2
    exit 1
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
python3 bench/scripts/peers_report.py --no-charts "$results" "$out" >/dev/null
if ! diff -u "$page" "$out"; then
    echo "check-peers-page: $page differs from what bench/scripts/peers_report.py $results writes" >&2
    exit 1
fi
echo "check-peers-page: $page is the report of $results"
