#!/usr/bin/env bash
# The routing effect on real compute: 4 lanes replicas on the cuda backend (the base preset,
# bf16, a bounded KV cache each) sharing one GPU, behind lanes-router, on a shared-prefix
# workload; one run per policy, each bounded in time. Run after bench/scripts/gpu/bench.sh, on the same
# machine and with the same build folder (its binaries, or prebuild.sh's). A policy written
# NAME+kv-events runs NAME with the replicas publishing KV events (vLLM's ZeroMQ format), which the
# router subscribes to; the others run on the router's own index alone.
#
# The four replicas time-share the one GPU (no MPS), so throughput is that of one GPU split four
# ways; the hit rates, TTFTs and imbalance are what the routing did on real model steps.
#
# Workload (scaled from results.sh's C64 so that a run takes well under a minute): 32 groups x 8
# prompts, 2,048-byte system prompts, 128-byte questions, 128 output tokens, 64 clients; 1,024
# blocks of 16 tokens per replica, so a replica holds about a quarter of the 4,096 blocks of
# system prompts (the same ratio as C64).
#
# Writes $OUT/routing.tgz (the result JSON and router metrics of each run) and appends a table to
# $OUT/summary.md. Environment: OUT (results/gpu), LANES_GPU_BUILD_DIR (build-gpu),
# ROUTING_POLICIES ("round_robin least_loaded prefix prefix+kv-events kv_aware"), ROUTING_RUN_S (75: the limit of one run),
# ROUTING_BUDGET_S (200: no run starts after this many seconds), ROUTING_REPLICA_ARGS (the
# replicas' backend flags, for a dry run elsewhere: "--backend sim").
set -uo pipefail
cd "$(dirname "$0")/../../.."
out="${OUT:-results/gpu}"
build="${LANES_GPU_BUILD_DIR:-build-gpu}"
policies="${ROUTING_POLICIES:-round_robin least_loaded prefix prefix+kv-events kv_aware}"
run_s="${ROUTING_RUN_S:-75}"
budget="${ROUTING_BUDGET_S:-200}"
backend="${ROUTING_REPLICA_ARGS:---backend cuda --preset base --cuda-dtype bf16}"
mkdir -p "$out"
[ -d "$build/lib" ] && export LD_LIBRARY_PATH="$PWD/$build/lib:${LD_LIBRARY_PATH:-}"
runs=$(mktemp -d)
start=$(date +%s)
say() { echo "routing.sh [$(($(date +%s) - start))s]: $*" | tee -a "$out/summary.md"; }

for p in $policies; do
    if [ $(($(date +%s) - start)) -ge "$budget" ]; then
        say "skipping $p: past the ${budget} s budget"
        continue
    fi
    say "4 replicas ($backend), policy $p"
    events=""
    [ "${p%+kv-events}" != "$p" ] &&
        events="--kv-events-endpoint tcp://127.0.0.1:* --kv-events-replay-endpoint tcp://127.0.0.1:*"
    # shellcheck disable=SC2086
    if ! LANES_BUILD_DIR="$build" LANES_START_TIMEOUT_S=60 timeout "$run_s" \
        bench/scripts/experiment.sh 4 "${p%+kv-events}" "$runs/$p.json" \
        --replica-args "$backend --kv-blocks 1024 $events" -- \
        --workload shared-prefix --groups 32 --prompts-per-group 8 --system-len 2048 \
        --question-len 128 --output-len 128 --concurrency 64 --session-per-group \
        >"$runs/$p.log" 2>&1; then
        say "FAILED or timed out: $p: $(tail -3 "$runs/$p.log" | tr '\n' ' ')"
    fi
    tar czf "$out/routing.tgz" -C "$runs" .
done

python3 - "$runs" "$policies" <<'PY' | tee -a "$out/summary.md"
import json, os, sys
runs, policies = sys.argv[1], sys.argv[2].split()
def precise_share(path):
    """Share of the router's requests routed on the replicas' KV events (prefix_match_precise)."""
    total = precise = 0.0
    try:
        lines = open(path).read().splitlines()
    except OSError:
        return "n/a"
    for line in lines:
        if line.startswith("lanes_router_requests_total{"):
            n = float(line.rsplit(" ", 1)[1])
            total += n
            precise += n if 'reason="prefix_match_precise"' in line else 0
    return f"{precise / total:.2f}" if total else "n/a"


print("\n| policy | hit rate | ideal | req/s | output tok/s | TTFT p50 | TTFT p99 | imbalance | errors "
      "| routed on events |")
print("|---|---|---|---|---|---|---|---|---|---|")
for p in policies:
    path = os.path.join(runs, p + ".json")
    if not os.path.exists(path):
        print(f"| {p} | no result | | | | | | | | |")
        continue
    r = json.load(open(path))
    hit, ttft = r["prefix_cache_hit_rate"], r["ttft_s"]
    print(f"| {p} | {hit['measured']:.3f} | {hit['ideal']:.3f} | {r['request_throughput']:.1f} | "
          f"{r['output_token_throughput']:,.0f} | {ttft['p50'] * 1e3:.1f} ms | "
          f"{ttft['p99'] * 1e3:.1f} ms | {r['imbalance']:.2f} | {r['failed']} | "
          f"{precise_share(os.path.join(runs, p + '.router-metrics.txt'))} |")
PY
rm -rf "$runs"
