#!/usr/bin/env bash
# Every folder of bench/results/ is cited by a doc (README.md, docs/, CONTRIBUTING.md), its runs
# are gzip-compressed (.json.gz), and the folder stays within 10 MB: the tree keeps the runs its
# docs stand on, older runs live in git history.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=0
for dir in bench/results/*/; do
    name=$(basename "$dir")
    if ! grep -rqF "results/$name" README.md CONTRIBUTING.md docs; then
        echo "check-results-cited: bench/results/$name is cited by no doc" >&2
        bad=1
    fi
done
plain=$(find bench/results -name '*.json' | head -5)
if [ -n "$plain" ]; then
    echo "check-results-cited: uncompressed runs (gzip -9n them):" $plain >&2
    bad=1
fi
kb=$(du -sk bench/results | cut -f1)
if [ "$kb" -gt 10240 ]; then
    echo "check-results-cited: bench/results/ holds $kb KB, over 10 MB" >&2
    bad=1
fi
[ $bad = 0 ] && echo "check-results-cited: every folder cited, $kb KB in all"
exit $bad
