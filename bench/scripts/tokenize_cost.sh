#!/usr/bin/env bash
# What --tokenize-endpoint costs: 4 sim replicas publishing KV events, one lanes-router, the same
# shared-prefix workload run twice through it (the second run's prompts are all in the router's
# LRU), with the router asking replica 0's /tokenize (MODE=tokenize) or hashing the text itself
# (MODE=text). Prints each run's lanes-bench summary and, for MODE=tokenize, the /tokenize round
# trips' count and mean from lanes_router_tokenize_seconds. Everything on 127.0.0.1; stops by
# itself.
#   MODE=tokenize OUT=build/tokenize-cost bench/scripts/tokenize_cost.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/scripts/lib.sh
bin="${LANES_BUILD_DIR:-build}"
mode="${MODE:-tokenize}"
out="${OUT:-build/tokenize-cost-$mode}"

ports=() urls=()
for i in 0 1 2 3; do
    "$bin/replica/lanes-replica" --host 127.0.0.1 --port 0 --seed "$i" --backend sim \
        --sim-speedup 4 --kv-blocks 4096 --kv-events-endpoint 'tcp://127.0.0.1:*' \
        --kv-events-replay-endpoint 'tcp://127.0.0.1:*' >"$work/replica$i.log" 2>&1 &
    pids+=($!)
done
for i in 0 1 2 3; do
    ports+=("$(port_of "$work/replica$i.log" lanes-replica)")
    urls+=(--replica "http://127.0.0.1:${ports[$i]}")
done
tokenize=()
[ "$mode" = tokenize ] && tokenize=(--tokenize-endpoint "http://127.0.0.1:${ports[0]}")
# shellcheck disable=SC2046
"$bin/router/lanes-router" --host 127.0.0.1 --port 0 $(bench_router_flags "$bin/router/lanes-router") \
    --access-log false --scrape-interval 100ms "${urls[@]}" "${tokenize[@]}" \
    >"$work/router.log" 2>&1 &
pids+=($!)
port=$(port_of "$work/router.log" lanes-router)
for _ in $(seq 300); do curl -sf "http://127.0.0.1:$port/readiness" >/dev/null && break; sleep 0.02; done

round_trips() { # count and seconds summed of the router's /tokenize round trips so far
    curl -sf "http://127.0.0.1:$port/metrics" | awk '
        /^lanes_router_tokenize_seconds_count/ { c = $NF }
        /^lanes_router_tokenize_seconds_sum/ { s = $NF }
        END { printf "%d %.6f\n", c, s }'
}
for run in 1 2; do
    read -r c0 s0 < <(round_trips)
    "$bin/bench/lanes-bench" --url "http://127.0.0.1:$port" --workload shared-prefix --groups 64 \
        --prompts-per-group 16 --system-len 2048 --question-len 128 --output-len 64 \
        --concurrency 64 --out "$out-run$run.json" | tail -2 | head -1
    read -r c1 s1 < <(round_trips)
    if [ "$mode" = tokenize ]; then
        awk -v n=$((c1 - c0)) -v s0="$s0" -v s1="$s1" 'BEGIN {
            printf "  /tokenize round trips: %d, mean %.3f ms\n", n, n ? (s1 - s0) / n * 1000 : 0 }'
    fi
done
