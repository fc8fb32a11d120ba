#!/usr/bin/env python3
"""The simulator against live runs: each case once through bench/scripts/experiment.sh (real
lanes-replica processes on the sim backend, a real router, lanes-bench over loopback) and once
through lanes-bench simulate with the same replicas, policy and client loop. Prints a markdown
table (hit rate and TTFT p50, live and simulated, and how far apart) and writes
bench/results/sim-agreement-DATE/*.json.
   bench/scripts/sim_agreement.py [OUT_DIR]
Environment: CASES (indexes into CASES below, space-separated; default all)."""
import json
import os
import subprocess
import sys
import time

out = sys.argv[1] if len(sys.argv) > 1 else time.strftime("bench/results/sim-agreement-%Y%m%d")
os.makedirs(out, exist_ok=True)
build = os.environ.get("LANES_BUILD_DIR", "build")
trace = "../shared/data/mooncake/conversation_trace.jsonl"
CASES = [
    ("shared-prefix, 4 replicas, closed loop 16", 4, "prefix", "--kv-blocks 4096",
     "--workload shared-prefix --groups 32 --prompts-per-group 16 --output-len 64 --concurrency 16"),
    ("multi-turn, 4 replicas, Poisson 3 conversations/s", 4, "prefix", "--kv-blocks 1024",
     "--workload multi-turn --sessions 64 --turns 4 --turn-len 256 --output-len 64 --rate 3"),
    ("Mooncake conversation (2,000 requests), 8 replicas, trace times", 8, "prefix",
     "--kv-blocks 4096",
     f"--workload trace --trace {trace} --trace-limit 2000 --length-scale 0.0625 "
     f"--time-scale 0.12"),
    ("shared-prefix, 4 replicas, round-robin", 4, "round_robin", "--kv-blocks 4096",
     "--workload shared-prefix --groups 32 --prompts-per-group 16 --output-len 64 --concurrency 16"),
    # The case above with the replicas publishing KV events and the router (its default
    # --kv-events) routing on them; the simulator's replicas publish theirs to its precise index
    # (prefix+kv-events).
    ("Mooncake conversation (2,000 requests), 8 replicas, trace times, KV events", 8,
     "prefix+kv-events", "--kv-blocks 4096",
     f"--workload trace --trace {trace} --trace-limit 2000 --length-scale 0.0625 "
     f"--time-scale 0.12"),
]
# The skewed agent workloads at 90 requests a second on 8 replicas (80 % of their round-robin
# capacity in lanes-bench simulate, 114-117 req/s): each arrival a waiting session's next turn or
# a new session, as lanes-bench sends them live.
SKEWED = {
    "agents": "--workload agents --skew-requests 3000 --output-len 128 --rate 90",
    "hot-tenant": "--workload hot-tenant --skew-requests 3000 --output-len 128 --rate 90",
    "bursty": "--workload bursty --skew-requests 3000 --output-len 128 --rate 90",
}
for w, args in SKEWED.items():
    for policy in ("prefix", "kv_aware", "round_robin", "least_loaded") + (
            ("session", "random") if w == "agents" else ()):
        CASES.append((f"{w}, 8 replicas, 90 req/s, {policy}", 8, policy, "--kv-blocks 4096", args))
# The live replicas' flags that publish KV events (ports picked by the kernel).
EVENTS = "--kv-events-endpoint tcp://127.0.0.1:* --kv-events-replay-endpoint tcp://127.0.0.1:*"
only = [int(c) for c in os.environ.get("CASES", "").split()]

rows = []
for i, (name, n, policy, replica, workload) in enumerate(CASES):
    if only and i not in only:
        continue
    live_policy, events = policy.removesuffix("+kv-events"), policy.endswith("+kv-events")
    live_path = f"{out}/case{i}-live.json"
    sim_path = f"{out}/case{i}-sim.json"
    subprocess.run(["bench/scripts/experiment.sh", str(n), live_policy, live_path,
                    "--replica-args", f"--backend sim {replica}" + (f" {EVENTS}" if events else ""),
                    "--", *workload.split()], check=True, stdout=subprocess.DEVNULL)
    subprocess.run([f"{build}/bench/lanes-bench", "simulate", "--replicas", str(n), "--policy",
                    policy, *replica.split(), *workload.split(), "--out", sim_path], check=True,
                   stdout=subprocess.DEVNULL)
    with open(live_path) as f:
        live = json.load(f)
    with open(sim_path) as f:
        sim = json.load(f)["results"][0]
    lh, sh = live["prefix_cache_hit_rate"]["measured"], sim["prefix_cache_hit_rate"]["measured"]
    lt, st = live["ttft_s"]["p50"], sim["ttft_s"]["p50"]
    if events:  # how many requests the live router placed on the replicas' own word
        with open(live_path.removesuffix(".json") + ".router-metrics.txt") as f:
            precise = sum(float(line.rsplit(" ", 1)[1]) for line in f
                          if line.startswith("lanes_router_requests_total{")
                          and 'reason="prefix_match_precise"' in line)
        print(f"{name}: live, prefix_match_precise {precise:.0f}; sim "
              f"{sim.get('reasons', {}).get('prefix_match_precise', 0)}", flush=True)
    rows.append({"case": name, "live_hit": lh, "sim_hit": sh, "live_ttft_p50": lt,
                 "sim_ttft_p50": st, "live_ttft_p99": live["ttft_s"]["p99"],
                 "sim_ttft_p99": sim["ttft_s"]["p99"], "live_e2e_p50": live["e2e_s"]["p50"],
                 "sim_e2e_p50": sim["e2e_s"]["p50"]})
    print(f"{name}: hit {lh:.3f} live / {sh:.3f} sim; TTFT p50 {lt * 1000:.1f} / {st * 1000:.1f} ms",
          flush=True)
with open(f"{out}/agreement.json", "w") as f:
    json.dump(rows, f, indent=1)
print("\n| case | hit rate live / sim | apart | TTFT p50 live / sim | apart | TTFT p99 live / sim "
      "| e2e p50 live / sim |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    dh = abs(r["sim_hit"] - r["live_hit"]) / max(r["live_hit"], 1e-9)
    dt = abs(r["sim_ttft_p50"] - r["live_ttft_p50"]) / r["live_ttft_p50"]
    print(f"| {r['case']} | {r['live_hit']:.3f} / {r['sim_hit']:.3f} | {dh:.1%} | "
          f"{r['live_ttft_p50'] * 1000:.1f} / {r['sim_ttft_p50'] * 1000:.1f} ms | {dt:.1%} | "
          f"{r['live_ttft_p99'] * 1000:.0f} / {r['sim_ttft_p99'] * 1000:.0f} ms | "
          f"{r['live_e2e_p50']:.2f} / {r['sim_e2e_p50']:.2f} s |")
