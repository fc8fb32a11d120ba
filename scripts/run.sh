#!/usr/bin/env bash
# The run command: installs what is missing, builds, then starts 4 local replicas (backend auto:
# CUDA when a GPU is usable, else CPU) and the router on port 8000 in front of them, in the
# foreground. Ctrl-C stops everything cleanly.
#   LANES_REPLICAS=N (default 4), LANES_PORT (default 8000), LANES_POLICY, LANES_BACKEND,
#   LANES_PRESET; extra arguments go to lanes-router.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh
bin="${LANES_BUILD_DIR:-build}"
n="${LANES_REPLICAS:-4}"
port="${LANES_PORT:-8000}"
first_replica_port=$((port + 1))

pids=()
stop_all() {
    trap - INT TERM EXIT
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
}
trap stop_all INT TERM EXIT

router_args=()
for i in $(seq 0 $((n - 1))); do
    p=$((first_replica_port + i))
    "$bin/replica/lanes-replica" --host 127.0.0.1 --port "$p" --seed "$i" \
        --backend "${LANES_BACKEND:-auto}" --preset "${LANES_PRESET:-tiny}" &
    pids+=($!)
    router_args+=(--replica "http://127.0.0.1:$p")
done
"$bin/router/lanes-router" --host 0.0.0.0 --port "$port" \
    ${LANES_POLICY:+--policy "$LANES_POLICY"} "${router_args[@]}" "$@" &
pids+=($!)
echo "lanes: router on http://localhost:$port in front of $n replicas; Ctrl-C stops everything"
wait -n "${pids[@]}" || true
