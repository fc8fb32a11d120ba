#!/usr/bin/env bash
# The experiments of docs/results.md, each a set of experiment.sh runs, all on the sim backend
# (no model math: modelled step times; the scheduler, KV blocks and prefix cache are real).
# Results: build/results/<experiment>/*.json, charts: docs/img/*.png (gnuplot), tables on stdout.
#   bench/scripts/results.sh [A] [C] [C64] [trace] [E] [sweep]   (default: all but sweep)
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/install-deps.sh --bench # gnuplot for the charts
out=build/results
mkdir -p "$out" docs/img
exp=bench/scripts/experiment.sh
which="${*:-A C C64 trace E}"
sim="--backend sim --sim-speedup 4"
# The default shared-prefix workload (C64 and the sweep), without its concurrency.
c64_workload="--workload shared-prefix --groups 64 --prompts-per-group 16 --system-len 2048
              --question-len 128 --output-len 256 --session-per-group"
sweep_kv_blocks="2048 2304 2432 2560 2688 3072"

if [[ " $which " == *" A "* ]]; then
    # The router's default policy; 12 clients per replica, 16 requests each (fewer made the
    # start and the last stragglers a large share of a short run).
    mkdir -p "$out/A"
    for n in 1 2 4 8; do
        $exp "$n" prefix "$out/A/replicas$n.json" --replica-args "$sim" -- \
            --workload random --requests $((192 * n)) --input-len 256 --output-len 64 \
            --concurrency $((12 * n)) >/dev/null
    done
fi
if [[ " $which " == *" C "* ]]; then
    mkdir -p "$out/C"
    for p in round_robin least_loaded session prefix kv_aware; do
        # 32 groups of 2,048-byte system prompts (128 blocks each, 4,096 in all); 1,400 blocks
        # per replica: the fleet can hold every group, one replica about a third of them.
        $exp 4 "$p" "$out/C/shared-prefix-$p.json" \
            --replica-args "--backend sim --kv-blocks 1400" -- \
            --workload shared-prefix --groups 32 --prompts-per-group 8 --system-len 2048 \
            --question-len 128 --output-len 64 --concurrency 32 --session-per-group >/dev/null
        # 48 conversations of 4 turns (up to ~175 blocks each); 2,400 blocks per replica.
        $exp 4 "$p" "$out/C/multi-turn-$p.json" \
            --replica-args "--backend sim --kv-blocks 2400" -- \
            --workload multi-turn --sessions 48 --turns 4 --turn-len 512 --output-len 64 \
            --concurrency 32 >/dev/null
    done
fi
if [[ " $which " == *" C64 "* ]]; then
    # The default shared-prefix workload (64 groups x 16 prompts, 2,048-byte system
    # prompts, 256 output tokens): 8,192 blocks of system prompts against 2,048 per replica, so
    # a replica holds about its quarter of the groups and no more. 128 clients keep every
    # replica's KV cache full, so throughput is bounded by how many requests fit in it (as on a
    # GPU), not by client round trips. Every policy with its defaults, and prefix once more with
    # the session policy's bounded-load cap (1.25 against its own 1.5).
    mkdir -p "$out/C64"
    c64="$c64_workload --concurrency 128"
    for p in round_robin least_loaded session prefix kv_aware; do
        $exp 4 "$p" "$out/C64/shared-prefix-$p.json" \
            --replica-args "$sim --kv-blocks 2048" -- $c64 >/dev/null
    done
    $exp 4 prefix "$out/C64/shared-prefix-prefix_cap1.25.json" \
        --router-args "--prefix-load-factor 1.25" \
        --replica-args "$sim --kv-blocks 2048" -- $c64 >/dev/null
fi
if [[ " $which " == *" sweep "* ]]; then
    # C64's workload at 192 clients over a range of cache sizes, round-robin against prefix:
    # where the two targets (3.8x the hit rate, 1.9x the throughput) meet in this cost model.
    mkdir -p "$out/sweep"
    c64="$c64_workload --concurrency 192"
    for kv in $sweep_kv_blocks; do
        for p in round_robin prefix; do
            $exp 4 "$p" "$out/sweep/$p-$kv.json" \
                --replica-args "$sim --kv-blocks $kv" -- $c64 >/dev/null
        done
    done
fi
if [[ " $which " == *" trace "* ]]; then
    mkdir -p "$out/trace"
    for t in synthetic conversation; do
        for p in round_robin least_loaded session prefix kv_aware; do
            $exp 8 "$p" "$out/trace/$t-$p.json" --replica-args "$sim --kv-blocks 4096" -- \
                --workload trace --trace "../shared/data/mooncake/${t}_trace.jsonl" \
                --trace-limit 2000 --length-scale 0.0625 --time-scale 0.03 >/dev/null
        done
    done
fi
if [[ " $which " == *" E "* ]]; then
    mkdir -p "$out/E"
    $exp 4 prefix "$out/E/kill.json" --replica-args "$sim" --kill-after 1.5 -- \
        --workload random --requests 1500 --input-len 256 --output-len 32 --concurrency 24 \
        >/dev/null
fi
python3 bench/scripts/summarize.py "$out"
