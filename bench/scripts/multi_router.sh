#!/usr/bin/env bash
# Several routers that agree: ROUTERS (3) lanes-routers behind one nginx (round-robin, kept-alive
# upstream connections), each in front of the same 4 sim replicas, which publish KV events;
# lanes-bench sends C64's workload to nginx, so consecutive requests of one prefix reach
# different routers. MODE=precise (the routers route on the replicas' events), approximate
# (--kv-events false: each router guesses from its own traffic) or single (one router, precise,
# no nginx: the reference). ROUTER_ARGS: more lanes-router flags, for every router. Everything on
# 127.0.0.1; stops by itself.
#   MODE=precise ROUTERS=3 KV_BLOCKS=4096 OUT=build/multi-router-precise.json bench/scripts/multi_router.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/scripts/lib.sh
bin="${LANES_BUILD_DIR:-build}"
mode="${MODE:-precise}"
routers="${ROUTERS:-3}"
[ "$mode" = single ] && routers=1
out="${OUT:-build/multi-router-$mode.json}"
front_port="${FRONT_PORT:-18401}"
command -v nginx >/dev/null || apt-get install -y -qq nginx-light >/dev/null

urls=()
for i in 0 1 2 3; do
    "$bin/replica/lanes-replica" --host 127.0.0.1 --port 0 --seed "$i" --backend sim \
        --sim-speedup 4 --kv-blocks "${KV_BLOCKS:-4096}" --kv-events-endpoint 'tcp://127.0.0.1:*' \
        --kv-events-replay-endpoint 'tcp://127.0.0.1:*' >"$work/replica$i.log" 2>&1 &
    pids+=($!)
done
for i in 0 1 2 3; do
    urls+=(--replica "http://127.0.0.1:$(port_of "$work/replica$i.log" lanes-replica)")
done
events=()
[ "$mode" = approximate ] && events=(--kv-events false)
read -r -a extra <<<"${ROUTER_ARGS:-}"
router_ports=()
for r in $(seq 1 "$routers"); do
    # shellcheck disable=SC2046
    "$bin/router/lanes-router" --host 127.0.0.1 --port 0 $(bench_router_flags "$bin/router/lanes-router") \
        --access-log false --scrape-interval 100ms "${urls[@]}" "${events[@]}" "${extra[@]}" \
        >"$work/router$r.log" 2>&1 &
    pids+=($!)
    router_ports+=("$(port_of "$work/router$r.log" lanes-router)")
done
for p in "${router_ports[@]}"; do
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$p/readiness" >/dev/null && break; sleep 0.05; done
done
sleep 1 # every router subscribed and its replicas live (precise), or scraped once
target="http://127.0.0.1:${router_ports[0]}"
if [ "$routers" -gt 1 ]; then
    servers=""
    for p in "${router_ports[@]}"; do servers+="server 127.0.0.1:$p; "; done
    # lanes-bench reads the hit rate before and after from one router's mirror of the
    # replicas' counters: always the same one.
    nginx_front "$front_port" "$servers" \
        "location = /metrics { proxy_pass http://127.0.0.1:${router_ports[0]}; }"
    nginx -c "$work/nginx.conf" -g 'daemon off;' &
    pids+=($!)
    sleep 0.5
    target="http://127.0.0.1:$front_port"
fi
"$bin/bench/lanes-bench" --url "$target" --workload shared-prefix --groups 64 \
    --prompts-per-group 16 --system-len 2048 --question-len 128 --output-len 256 \
    --session-per-group --concurrency 128 --out "$out" | tail -2
