#!/usr/bin/env bash
# Runs one libFuzzer target: run_target.sh BINARY SEEDS WORK_CORPUS SECONDS RSS_MB
# The seeds are copied into WORK_CORPUS, which the run grows; a crash, a leak, undefined
# behaviour or a run past RSS_MB fails it (the input is left as crash-* / oom-* / leak-* in
# WORK_CORPUS.artifacts/).
set -euo pipefail
binary=$1 seeds=$2 work=$3 seconds=$4 rss=$5
mkdir -p "$work" "$work.artifacts"
cp -n "$seeds"/* "$work"/ 2>/dev/null || true
cd "$work"
exec "$binary" -max_total_time="$seconds" -rss_limit_mb="$rss" -max_len=65536 -timeout=10 \
    -print_final_stats=1 -artifact_prefix="$work.artifacts/" "$work"
