#!/usr/bin/env bash
# The run command: installs what is missing, builds, then starts 4 local replicas (backend auto:
# CUDA when a GPU is usable, else CPU) and the router on port 8000 in front of them, in the
# foreground. Ctrl-C stops everything cleanly.
#   LANES_REPLICAS=N (default 4), LANES_PORT (default 8000), LANES_ADMIN_PORT (default 8090),
#   LANES_POLICY, LANES_BACKEND,
#   LANES_PRESET, LANES_START_TIMEOUT_S (how long to wait for the replicas to listen, 60);
#   extra arguments go to lanes-router. Answers carry x-lanes-replica and x-lanes-route-reason
#   here (--route-headers true; off by default). Each line of output says whose it is
#   ([router], [replica :8001], ...).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --run # what building and running the servers needs, no test toolchain
scripts/build.sh
bin="${LANES_BUILD_DIR:-build}"
n="${LANES_REPLICAS:-4}"
port="${LANES_PORT:-8000}"
admin_port="${LANES_ADMIN_PORT:-8090}"
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
    # Each replica publishes its KV-cache events (ports picked by the kernel, announced in its
    # /metrics), so the router routes on what they hold (docs/kv-events.md).
    "$bin/replica/lanes-replica" --host 127.0.0.1 --port "$p" --seed "$i" \
        --backend "${LANES_BACKEND:-auto}" --preset "${LANES_PRESET:-tiny}" \
        --kv-events-endpoint 'tcp://127.0.0.1:*' --kv-events-replay-endpoint 'tcp://127.0.0.1:*' \
        > >(sed -u "s/^/[replica :$p] /") 2>&1 &
    pids+=($!)
    router_args+=(--replica "http://127.0.0.1:$p")
done
# The router starts once every replica listens (a model takes a moment to build), so that its
# first health checks find them up instead of ejecting them for a few seconds. Bounded:
# LANES_START_TIMEOUT_S (60).
deadline=$((SECONDS + ${LANES_START_TIMEOUT_S:-60}))
for i in $(seq 0 $((n - 1))); do
    until (exec 3<>"/dev/tcp/127.0.0.1/$((first_replica_port + i))") 2>/dev/null; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            echo "lanes: replica on port $((first_replica_port + i)) is not listening; starting" \
                "the router anyway" >&2
            break
        fi
        sleep 0.1
    done
done
"$bin/router/lanes-router" --host 0.0.0.0 --port "$port" --admin-port "$admin_port" --route-headers true \
    ${LANES_POLICY:+--policy "$LANES_POLICY"} "${router_args[@]}" "$@" \
    > >(sed -u "s/^/[router] /") 2>&1 &
pids+=($!)
echo "lanes: router on http://localhost:$port in front of $n replicas (admin API on" \
    "http://127.0.0.1:$admin_port, read-only without --admin-token; the live page at" \
    "http://127.0.0.1:$admin_port/ui); Ctrl-C stops everything"
wait -n "${pids[@]}" || true
