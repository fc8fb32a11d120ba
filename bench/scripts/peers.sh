#!/usr/bin/env bash
# lanes' policies against the peers' algorithms (bench/sim/peers), all in lanes-bench simulate
# (modelled: the replicas' scheduler and prefix cache are real, their step times the sim cost
# model's, the clock virtual), on 4, 8 and 16 replicas; then bench/scripts/peers_report.py writes
# docs/results-peers.md and its charts. lanes' default policy and Dynamo's KV router run twice: on
# their own memory of where prefixes went, and with the replicas publishing KV events
# (NAME+kv-events).
#  - c64, multi-turn and the two Mooncake traces at half and 90 % load, offered at the request
#    rates recorded in bench/results/peers-20261205 (BASE_RATES), so that a row compares like
#    with like across versions of the policies; a row without one there runs at that fraction of
#    the closed-loop throughput of lanes' default policy;
#  - the skewed agent workloads (agents, hot-tenant, bursty) at 50, 80 and 95 % of the fleet's
#    round-robin capacity.
#   bench/scripts/peers.sh [OUT_DIR]      (default bench/results/peers-YYYYMMDD)
# Every row runs once per seed (its arrivals, and the generated workloads' text, differ) and the
# report gives each figure's mean over the seeds: one run's p99 over a few hundred requests rests
# on its few slowest.
# Environment: LANES_BUILD_DIR (build), REPLICAS ("4 8 16"), SEEDS ("1 2 3 4 5"), WORKLOADS (all
# seven), LOADS (the loads of every workload, instead of its own), BASE_RATES (a results folder
# whose rates the recorded rows reuse; default bench/results/peers-20261205), PEERS_REPORT_OUT (the
# page to write; default docs/results-peers.md), POLICIES (default every policy, lanes' and the
# peers', with the two +kv-events runs), SIM_FLAGS (more lanes-bench simulate flags, for trials
# of a policy's knobs), REPORT (0: leave the report out, as for a trial of lanes' policies alone).
set -euo pipefail
cd "$(dirname "$0")/../.."
scripts/install-deps.sh --bench # gnuplot for the charts
bin="${LANES_BUILD_DIR:-build}/bench/lanes-bench"
[ -x "$bin" ] || scripts/build.sh
out="${1:-bench/results/peers-$(date +%Y%m%d)}"
mkdir -p "$out"
traces=../shared/data/mooncake
declare -A workload=(
    [c64]="--workload shared-prefix --groups 64 --prompts-per-group 16 --system-len 2048 --question-len 128 --output-len 256"
    [multi-turn]="--workload multi-turn --sessions 128 --turns 4 --turn-len 256 --output-len 128"
    [mooncake-conversation]="--workload trace --trace $traces/conversation_trace.jsonl --length-scale 0.0625"
    [mooncake-synthetic]="--workload trace --trace $traces/synthetic_trace.jsonl --length-scale 0.0625"
    [agents]="--workload agents --skew-requests 3000 --output-len 128"
    [hot-tenant]="--workload hot-tenant --skew-requests 3000 --output-len 128"
    [bursty]="--workload bursty --skew-requests 3000 --output-len 128"
)
skewed=" agents hot-tenant bursty "
base="${BASE_RATES:-bench/results/peers-20261205}"
# The offered rate a recorded row ran at, or nothing.
recorded_rate() {
    local f="$base/$1.json.gz"
    [ -f "$f" ] || f="$base/$1.json"
    [ -f "$f" ] || return 0
    python3 -c 'import gzip, json, sys
p = sys.argv[1]
print(json.load((gzip.open if p.endswith(".gz") else open)(p, "rt"))["rate"])' "$f"
}
for w in ${WORKLOADS:-c64 multi-turn mooncake-conversation mooncake-synthetic agents hot-tenant bursty}; do
    if [[ $skewed == *" $w "* ]]; then loads=${LOADS:-0.5 0.8 0.95}; else loads=${LOADS:-0.5 0.9}; fi
    for n in ${REPLICAS:-4 8 16}; do
        for load in $loads; do
            for seed in ${SEEDS:-1 2 3 4 5}; do
                row="$w-r$n-l$load-s$seed"
                echo "== $w, $n replicas, load $load, seed $seed"
                if [[ $skewed == *" $w "* ]]; then
                    offered="--load $load --capacity-policy round_robin"
                elif rate=$(recorded_rate "$row") && [ -n "$rate" ]; then
                    offered="--rate $rate"
                else
                    offered="--load $load"
                fi
                # shellcheck disable=SC2086
                "$bin" simulate --policy "${POLICIES:-all,prefix+kv-events,dynamo_kv+kv-events}" \
                    --replicas "$n" $offered --seed "$seed" ${workload[$w]} ${SIM_FLAGS:-} --out "$out/$row.json" |
                    grep -v '^results written'
            done
        done
    done
done
[ "${REPORT:-1}" = 0 ] || python3 bench/scripts/peers_report.py "$out" ${PEERS_REPORT_OUT:+"$PEERS_REPORT_OUT"}
