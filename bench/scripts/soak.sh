#!/usr/bin/env bash
# A soak of the router: 4 sim replicas and a router on loopback, SOAK_MINUTES (30) of mixed
# traffic with replica kills and admin churn (bench/scripts/soak.py), the router's RSS, open fds
# and /metrics size sampled every 10 s. Results in results/soak-<date>/ (samples.csv, soak.json,
# soak.svg); exits non-zero when the router died or a whole answer was lost.
#   SOAK_MINUTES (30), SOAK_CLIENTS (6), SOAK_KILL_EVERY (180 s), SOAK_CHURN_EVERY (60 s),
#   LANES_BUILD_DIR (build), SOAK_OUT (results/soak-<date>).
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/scripts/lib.sh
bin="${LANES_BUILD_DIR:-build}"
minutes="${SOAK_MINUTES:-30}"
out="${SOAK_OUT:-results/soak-$(date -u +%Y%m%d-%H%M)}"
base=$((20000 + RANDOM % 20000))
replica_cmd="exec $bin/replica/lanes-replica --host 127.0.0.1 --port {port} --backend sim --sim-speedup 10 --kv-blocks 512 --log-level warn"
ports=() rpids=() router_args=()
for i in 0 1 2 3; do
    p=$((base + 1 + i))
    ports+=("$p")
    setsid bash -c "${replica_cmd//\{port\}/$p}" >"$work/replica-$i.log" 2>&1 &
    rpids+=($!)
    pids+=($!)
    router_args+=(--replica "http://127.0.0.1:$p")
done
for p in "${ports[@]}"; do
    for _ in $(seq 100); do (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null && break; sleep 0.1; done
done
"$bin/router/lanes-router" --host 127.0.0.1 --port "$base" "${router_args[@]}" \
    --admin-port $((base + 8)) --admin-insecure-loopback --route-headers true \
    --health-interval 500ms --access-log false --log-level warn >"$work/router.log" 2>&1 &
router_pid=$!
pids+=("$router_pid")
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$base/health" >/dev/null && break; sleep 0.1; done
status=0
python3 bench/scripts/soak.py --router "http://127.0.0.1:$base" --router-pid "$router_pid" \
    --admin "http://127.0.0.1:$((base + 8))" \
    --replica-cmd "$replica_cmd" --replica-ports "$(IFS=,; echo "${ports[*]}")" \
    --replica-pids "$(IFS=,; echo "${rpids[*]}")" --spare-port $((base + 9)) \
    --minutes "$minutes" --clients "${SOAK_CLIENTS:-6}" --kill-every "${SOAK_KILL_EVERY:-180}" \
    --churn-every "${SOAK_CHURN_EVERY:-60}" --out "$out" || status=$?
cp "$work/router.log" "$out/router.log"
# The replicas restarted by the soak run in sessions of their own: stop them too.
pkill -f -- "--port $((base + 1))|--port $((base + 2))|--port $((base + 3))|--port $((base + 4))|--port $((base + 9))" 2>/dev/null || true
echo "soak: results in $out"
exit "$status"
