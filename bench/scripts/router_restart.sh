#!/usr/bin/env bash
# A router restarted mid-run: 4 sim replicas publishing KV events, one lanes-router behind nginx
# (so clients keep one address, as behind a Kubernetes Service), lanes-bench sending a
# shared-prefix workload (GROUPS_N system prompts). At RESTART_AT seconds a fresh router starts;
# once its /readiness says ready, nginx is pointed at it and the old one is killed -9 (a rolling
# restart, as a Deployment replaces a pod: the new one takes traffic when it turns ready). The
# fleet's prefix-cache hit rate is read from the replicas' own counters every second; the script
# prints it over the WINDOW seconds before the switch (steady state) and the WINDOW seconds after.
#   MODE=dump        the new router reads each replica's block dump (--kv-bootstrap-token), the
#                    replicas' replay buffers too short to reach back to their first batch
#   MODE=replay      replay buffers long enough (the default 10000 batches): no dump needed
#   MODE=blind       short replay buffers and no token: the new router starts approximate, empty
#   MODE=approximate no KV events at all (--kv-events false): the same, by design
# Everything on 127.0.0.1; stops by itself.
#   MODE=dump OUT=build/router-restart-dump.json bench/scripts/router_restart.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/scripts/lib.sh
bin="${LANES_BUILD_DIR:-build}"
mode="${MODE:-dump}"
out="${OUT:-build/router-restart-$mode.json}"
restart_at="${RESTART_AT:-20}"
window="${WINDOW:-10}"
front_port="${FRONT_PORT:-18421}"
router_port="${ROUTER_PORT:-18422}"
groups="${GROUPS_N:-256}"
command -v nginx >/dev/null || apt-get install -y -qq nginx-light >/dev/null

echo "restart-token-$$-$RANDOM" >"$work/token"
replica_flags=(--kv-events-endpoint 'tcp://127.0.0.1:*' --kv-events-replay-endpoint 'tcp://127.0.0.1:*')
case "$mode" in
    dump) replica_flags+=(--kv-events-buffer-steps 50 --kv-dump-token-file "$work/token") ;;
    blind) replica_flags+=(--kv-events-buffer-steps 50) ;;
    replay | approximate) ;;
    *) echo "router_restart.sh: MODE is dump, replay, blind or approximate" >&2; exit 2 ;;
esac
router_flags=()
[ "$mode" = dump ] && router_flags=(--kv-bootstrap-token-file "$work/token")
[ "$mode" = approximate ] && router_flags=(--kv-events false)

urls=() ports=()
for i in 0 1 2 3; do
    "$bin/replica/lanes-replica" --host 127.0.0.1 --port 0 --seed "$i" --backend sim \
        --sim-speedup 4 --kv-blocks "${KV_BLOCKS:-16384}" "${replica_flags[@]}" \
        >"$work/replica$i.log" 2>&1 &
    pids+=($!)
done
for i in 0 1 2 3; do
    ports+=("$(port_of "$work/replica$i.log" lanes-replica)")
    urls+=(--replica "http://127.0.0.1:${ports[$i]}")
done

start_router() { # $1: log file, $2: port
    # shellcheck disable=SC2046
    "$bin/router/lanes-router" --host 127.0.0.1 --port "$2" \
        $(bench_router_flags "$bin/router/lanes-router") --access-log false --scrape-interval 100ms \
        "${urls[@]}" "${router_flags[@]}" >"$1" 2>&1 &
    router_pid=$!
    pids+=("$router_pid")
    for _ in $(seq 500); do
        curl -sf "http://127.0.0.1:$2/readiness" >/dev/null && return 0
        sleep 0.01
    done
    echo "router_restart.sh: the router did not get ready" >&2; cat "$1" >&2; return 1
}
start_router "$work/router1.log" "$router_port"
sleep 1

front() { # nginx in front of the router on port $1
    nginx_front "$front_port" "server 127.0.0.1:$1 max_fails=0;"
}
front "$router_port"
nginx -c "$work/nginx.conf" -g 'daemon off;' &
pids+=($!)
sleep 0.5

# The fleet's prefix-cache counters (hit and queried tokens), summed over the replicas.
counters() {
    local hits=0 queries=0 h q
    for p in "${ports[@]}"; do
        read -r h q < <(curl -sf "http://127.0.0.1:$p/metrics" | awk '
            /^vllm:prefix_cache_hits_total[{ ]/ { h += $NF }
            /^vllm:prefix_cache_queries_total[{ ]/ { q += $NF }
            END { printf "%.0f %.0f\n", h, q }')
        hits=$((hits + h)) queries=$((queries + q))
    done
    echo "$hits $queries"
}

"$bin/bench/lanes-bench" --url "http://127.0.0.1:$front_port" --workload shared-prefix \
    --groups "$groups" --prompts-per-group "${PROMPTS_PER_GROUP:-32}" --system-len 2048 \
    --question-len 128 --output-len "${OUTPUT_LEN:-64}" --session-per-group --concurrency 64 \
    --request-timeout 60000ms --out "$work/bench.json" >"$work/bench.log" 2>&1 &
bench=$!
pids+=("$bench")

: >"$work/samples"
for s in $(seq 0 $((restart_at + window + 1))); do
    echo "$s $(counters)" >>"$work/samples"
    if [ "$s" -eq "$restart_at" ]; then
        old_pid=$router_pid
        start_t=$(date +%s%N)
        start_router "$work/router2.log" "$((router_port + 1))"
        ready_ms=$((($(date +%s%N) - start_t) / 1000000))
        front "$((router_port + 1))"
        nginx -c "$work/nginx.conf" -s reload 2>/dev/null
        sleep 0.2 # nginx's old worker finishes the requests it has; new ones go to the new router
        kill -9 "$old_pid"
    fi
    kill -0 "$bench" 2>/dev/null || {
        echo "router_restart.sh: the load ended at ${s}s, before the window closed" >&2
        tail -5 "$work/bench.log" >&2
        exit 1
    }
    sleep 1
done
kill "$bench" 2>/dev/null || true
live=$(curl -sf "http://127.0.0.1:$((router_port + 1))/metrics" | grep -c '^lanes_router_kv_events_live{.*} 1' || true)
python3 - "$work/samples" "$restart_at" "$window" "$mode" "$out" "$live" "$ready_ms" "$groups" <<'PY'
import json, sys
path, at, window, mode, out, live, ready_ms, groups = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], int(sys.argv[6]), int(sys.argv[7]), int(sys.argv[8])
rows = {int(s): (int(h), int(q)) for s, h, q in (l.split() for l in open(path))}
def rate(a, b):
    dh, dq = rows[b][0] - rows[a][0], rows[b][1] - rows[a][1]
    return dh / dq if dq else 0.0
steady = rate(at - window, at)
after = rate(at, at + window)
per_second = [round(rate(s, s + 1), 4) for s in range(at - window, at + window)]
res = {"mode": mode, "steady_hit_rate": round(steady, 4), "after_restart_hit_rate": round(after, 4),
       "ratio": round(after / steady, 4) if steady else None, "window_s": window,
       "replicas_live_after": live, "new_router_ready_ms": ready_ms, "groups": groups,
       "per_second_from_minus_window": per_second,
       "modelled": "sim replicas (modelled costs), measured hit rates"}
json.dump(res, open(out, "w"), indent=1)
print(f"{mode}: hit rate {steady:.4f} over the {window} s before the switch, {after:.4f} over the {window} s after ({after / steady if steady else 0:.3f} of steady); new router ready in {ready_ms} ms, {live} replicas live")
PY
