#!/usr/bin/env bash
# Starts N local replicas and a router with a given policy (all on 127.0.0.1, ports picked by the
# kernel), runs lanes-bench against the router, and stops everything.
#   experiment.sh REPLICAS POLICY OUT.json [--replica-args "ARGS"] [--router-args "ARGS"]
#                 [--kill-after SECONDS] -- LANES-BENCH-ARGS...
# --kill-after kills one replica (SIGKILL) that many seconds into the run (fault isolation).
# Environment: LANES_BUILD_DIR (build), LANES_START_TIMEOUT_S (10: how long a process may take
# to start listening).
set -euo pipefail
cd "$(dirname "$0")/../.."
bin="${LANES_BUILD_DIR:-build}"
n="$1" policy="$2" out="$3"
shift 3
replica_args="" router_args="" kill_after=""
while [ $# -gt 0 ]; do
    case "$1" in
        --replica-args) replica_args="$2"; shift 2 ;;
        --router-args) router_args="$2"; shift 2 ;;
        --kill-after) kill_after="$2"; shift 2 ;;
        --) shift; break ;;
        *) echo "experiment.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
source bench/scripts/lib.sh

# Seconds a process may take to start listening (a cuda replica builds its model first).
start_timeout="${LANES_START_TIMEOUT_S:-10}"
port_of() { # waits for "listening on http://host:PORT" in a log file
    for _ in $(seq 1 $((start_timeout * 50))); do
        p=$(grep -o 'listening on http://[^ ]*' "$1" 2>/dev/null | head -1 | sed 's/.*://')
        [ -n "$p" ] && { echo "$p"; return 0; }
        sleep 0.02
    done
    echo "experiment.sh: no port in $1" >&2; cat "$1" >&2; return 1
}

replica_urls=()
replica_pids=()
for i in $(seq 0 $((n - 1))); do
    # shellcheck disable=SC2086
    "$bin/replica/lanes-replica" --host 127.0.0.1 --port 0 --seed "$i" $replica_args \
        >"$work/replica$i.log" 2>&1 &
    pids+=($!); replica_pids+=($!)
    replica_urls+=(--replica "http://127.0.0.1:$(port_of "$work/replica$i.log")")
done
# shellcheck disable=SC2086
# shellcheck disable=SC2046
"$bin/router/lanes-router" --host 127.0.0.1 --port 0 --policy "$policy" --access-log false \
    $(bench_router_flags "$bin/router/lanes-router") \
    "${replica_urls[@]}" $router_args >"$work/router.log" 2>&1 &
pids+=($!)
router="http://127.0.0.1:$(port_of "$work/router.log")"
if [ -n "$kill_after" ]; then
    (sleep "$kill_after"; kill -9 "${replica_pids[0]}" 2>/dev/null) &
fi
# A result file from an earlier run must not pass for this one's: removed first, and a bench
# that could not run (exit 2: bad flags, unreadable trace, unreachable router) fails the
# experiment. Exit 1 (some requests failed) is a result, as in the fault-isolation run.
rm -f "$out"
bench_rc=0
"$bin/bench/lanes-bench" --url "$router" --out "$out" "$@" || bench_rc=$?
if [ "$bench_rc" -ge 2 ]; then
    echo "experiment: lanes-bench could not run (exit $bench_rc)" >&2
    exit "$bench_rc"
fi
# The router's view after the run (route reasons, mirrored counters) next to the result.
curl -s "$router/metrics" >"${out%.json}.router-metrics.txt" || true
