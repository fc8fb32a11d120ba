#!/usr/bin/env bash
# Admission control under a burst: 4 sim replicas (--max-num-seqs 8 each: 32 requests running
# fleet-wide) and a closed-loop burst of 3x that (96 streams) of the shared-prefix workload, run
# twice: without the router's queue (every request dispatched at once) and with it
# (--replica-max-inflight 8, so requests past the engines' batch wait in the router). Each
# replica's vllm:num_requests_waiting is sampled every 100 ms. Writes results/admission-<date>/
# (no-queue.json, queue.json, waiting-*.csv, summary.json) and prints a table.
#   ADMISSION_CONCURRENCY (96), ADMISSION_GROUPS (32), ADMISSION_PER_GROUP (24),
#   ADMISSION_OUTPUT (64), ADMISSION_SPEEDUP (4), LANES_BUILD_DIR (build), ADMISSION_OUT,
#   ADMISSION_QUEUE_ARGS (more router flags for the queued run, e.g. --queue-affinity-wait 3s).
set -euo pipefail
cd "$(dirname "$0")/../.."
source bench/scripts/lib.sh
bin="${LANES_BUILD_DIR:-build}"
out="${ADMISSION_OUT:-results/admission-$(date -u +%Y%m%d-%H%M)}"
mkdir -p "$out"
concurrency="${ADMISSION_CONCURRENCY:-96}"

run() { # run NAME ROUTER-ARGS...
    local name=$1
    shift
    local rp=() urls=() ports=()
    for i in 0 1 2 3; do
        "$bin/replica/lanes-replica" --host 127.0.0.1 --port 0 --seed "$i" --backend sim \
            --sim-speedup "${ADMISSION_SPEEDUP:-4}" --max-num-seqs 8 --log-level info \
            >"$work/$name-replica$i.log" 2>&1 &
        rp+=($!)
        pids+=($!)
    done
    for i in 0 1 2 3; do
        ports+=("$(port_of "$work/$name-replica$i.log" lanes-replica)")
        urls+=(--replica "http://127.0.0.1:${ports[$i]}")
    done
    "$bin/router/lanes-router" --host 127.0.0.1 --port 0 --admin-port 0 --route-headers true --access-log false \
        --scrape-interval 100ms "${urls[@]}" "$@" >"$work/$name-router.log" 2>&1 &
    local router=$!
    pids+=($!)
    local base
    base=$(port_of "$work/$name-router.log" lanes-router)
    for _ in $(seq 100); do curl -sf "http://127.0.0.1:$base/readiness" >/dev/null && break; sleep 0.05; done
    # The engines' own queues, sampled while the burst runs.
    (
        echo "seconds,replica,waiting,running"
        start=$(date +%s.%N)
        while kill -0 "$router" 2>/dev/null; do
            now=$(date +%s.%N)
            for i in 0 1 2 3; do
                m=$(curl -s --max-time 1 "http://127.0.0.1:${ports[$i]}/metrics" || true)
                w=$(awk '/^vllm:num_requests_waiting/ {print $2}' <<<"$m" | head -1)
                r=$(awk '/^vllm:num_requests_running/ {print $2}' <<<"$m" | head -1)
                echo "$(awk -v a="$now" -v b="$start" 'BEGIN{printf "%.2f", a-b}'),$i,${w:-0},${r:-0}"
            done
            sleep 0.1
        done
    ) >"$out/waiting-$name.csv" &
    local sampler=$!
    pids+=($!)
    # Exit 1 (some requests failed) is a result; 2 (could not run) is not.
    local rc=0
    "$bin/bench/lanes-bench" --url "http://127.0.0.1:$base" --workload shared-prefix \
        --concurrency "$concurrency" --groups "${ADMISSION_GROUPS:-32}" \
        --prompts-per-group "${ADMISSION_PER_GROUP:-24}" --output-len "${ADMISSION_OUTPUT:-64}" \
        --out "$out/$name.json" >/dev/null || rc=$?
    [ "$rc" -lt 2 ] || { echo "admission.sh: lanes-bench failed ($rc)" >&2; exit 1; }
    curl -s "http://127.0.0.1:$base/metrics" >"$out/$name-router-metrics.txt"
    kill "$router" "${rp[@]}" 2>/dev/null || true
    wait "$router" "${rp[@]}" 2>/dev/null || true
    wait "$sampler" 2>/dev/null || true
}

run no-queue
# shellcheck disable=SC2086
run queue --replica-max-inflight 8 --queue-size 1024 --queue-timeout 60s ${ADMISSION_QUEUE_ARGS:-}
python3 - "$out" <<'PY'
import csv, json, sys
out = sys.argv[1]
rows, summary = [], {}
for name in ("no-queue", "queue"):
    r = json.load(open(f"{out}/{name}.json"))
    waiting = [float(x["waiting"]) for x in csv.DictReader(open(f"{out}/waiting-{name}.csv"))]
    s = {
        "ttft_p50_ms": r["ttft_s"]["p50"] * 1000, "ttft_p99_ms": r["ttft_s"]["p99"] * 1000,
        "e2e_p99_ms": r["e2e_s"]["p99"] * 1000, "req_per_s": r["request_throughput"],
        "hit_rate": r["prefix_cache_hit_rate"]["measured"],
        "hit_rate_ideal": r["prefix_cache_hit_rate"]["ideal"],
        "engine_waiting_max": max(waiting) if waiting else None,
        "engine_waiting_mean": sum(waiting) / len(waiting) if waiting else None,
        "completed": r["completed"], "failed": r["failed"],
    }
    summary[name] = s
json.dump(summary, open(f"{out}/summary.json", "w"), indent=2)
print("| run | TTFT p50 ms | TTFT p99 ms | e2e p99 ms | req/s | hit rate | engine waiting max / mean |")
print("|---|---|---|---|---|---|---|")
for name, s in summary.items():
    print(f"| {name} | {s['ttft_p50_ms']:.0f} | {s['ttft_p99_ms']:.0f} | {s['e2e_p99_ms']:.0f} | "
          f"{s['req_per_s']:.1f} | {s['hit_rate']:.3f} | {s['engine_waiting_max']:.0f} / "
          f"{s['engine_waiting_mean']:.1f} |")
PY
echo "admission: results in $out"
