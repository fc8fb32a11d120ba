#!/usr/bin/env python3
"""Turns lanes-bench result files (build/results/...) into markdown tables on stdout and PNG
charts in docs/img/ (drawn by gnuplot, a Debian package). Every figure comes from the sim backend,
except the real-compute routing runs kept in bench/results/h200/ (bench/scripts/gpu/routing.sh)."""
import gzip
import json
import os
import subprocess
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "build/results"
img = "docs/img"
os.makedirs(img, exist_ok=True)
# prefix_cap1.25: prefix with --prefix-load-factor 1.25 (only C64 runs it; absent files are
# skipped).
POLICIES = ["round_robin", "least_loaded", "session", "prefix", "prefix+kv-events", "kv_aware",
            "prefix_cap1.25"]


def load(path):
    # A run as the experiment wrote it, or as the tree keeps it (gzip-compressed).
    if not os.path.exists(path) and os.path.exists(path + ".gz"):
        path += ".gz"
    try:
        with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def gnuplot(script):
    subprocess.run(["gnuplot"], input=script, text=True, check=True)


def hit(r):
    m = r["prefix_cache_hit_rate"]["measured"]
    return float("nan") if m is None else m


def scaling():
    rows = []
    for n in (1, 2, 4, 8):
        r = load(f"{root}/A/replicas{n}.json")
        if r:
            rows.append((n, r["output_token_throughput"], r["request_throughput"], r["failed"]))
    if not rows:
        return
    base = rows[0][1] / rows[0][0]
    print("\n### A. DP scaling (sim backend)\n")
    print("| replicas | output tokens/s | requests/s | efficiency | failed |")
    print("|---|---|---|---|---|")
    for n, tps, rps, failed in rows:
        print(f"| {n} | {tps:.0f} | {rps:.1f} | {tps / (base * n):.0%} | {failed} |")
    data = "\n".join(f"{n} {tps:.1f} {base * n:.1f}" for n, tps, _, _ in rows)
    gnuplot(f"""set terminal pngcairo size 640,400 noenhanced
set output '{img}/scaling.png'
set title 'DP scaling (sim backend)'
set xlabel 'replicas'; set ylabel 'output tokens/s'; set key left top; set grid
plot '-' using 1:2 with linespoints title 'measured', '-' using 1:3 with lines dt 2 title 'linear'
{data}
e
{data}
e
""")


def routing(section, prefix, title, names, base=None, label="sim backend"):
    rows = []
    for p in POLICIES:
        r = load(f"{base or root}/{section}/{prefix}-{p}.json")
        if r:
            rows.append((p, r))
    if not rows:
        return
    print(f"\n### {title} ({label})\n")
    print("| policy | hit rate | ideal | output tokens/s | TTFT p50 ms | TTFT p99 ms | imbalance | failed |")
    print("|---|---|---|---|---|---|---|---|")
    for p, r in rows:
        print(f"| {p} | {hit(r):.3f} | {r['prefix_cache_hit_rate']['ideal']:.3f} | "
              f"{r['output_token_throughput']:.0f} | {r['ttft_s']['p50'] * 1000:.1f} | "
              f"{r['ttft_s']['p99'] * 1000:.1f} | {r['imbalance']:.2f} | {r['failed']} |")
    rr = dict(rows).get("round_robin")
    for name in ("prefix", "prefix_cap1.25"):
        px = dict(rows).get(name)
        if rr and px and hit(rr) > 0:
            print(f"\n{name} / round_robin: hit rate {hit(px) / hit(rr):.2f}x, output throughput "
                  f"{px['output_token_throughput'] / rr['output_token_throughput']:.2f}x, "
                  f"TTFT p50 {rr['ttft_s']['p50'] / px['ttft_s']['p50']:.2f}x lower")
    data = "\n".join(f"{i} {p} {hit(r):.4f} {r['prefix_cache_hit_rate']['ideal']:.4f}"
                     for i, (p, r) in enumerate(rows))
    gnuplot(f"""set terminal pngcairo size 640,400 noenhanced
set output '{img}/{names}.png'
set title '{title}: fleet prefix-cache hit rate ({label})'
set style data histograms; set style fill solid 0.8; set boxwidth 0.8
set yrange [0:1]; set ylabel 'hit rate'; set grid y; set xtics rotate by -20
plot '-' using 3:xtic(2) title 'measured', '-' using 4:xtic(2) title 'ideal'
{data}
e
{data}
e
""")


def fault():
    r = load(f"{root}/E/kill.json")
    if not r:
        return
    bins = {}
    for start, e2e, err in r["timeline"]:
        end = int(start + e2e)
        ok, bad = bins.get(end, (0, 0))
        bins[end] = (ok + (err == ""), bad + (err != ""))
    print("\n### E. Fault isolation (sim backend)\n")
    print(f"{r['completed']} completed, {r['failed']} failed; errors by kind: "
          f"{json.dumps(r['errors'])}\n")
    print("| second | completed | failed |")
    print("|---|---|---|")
    for s in sorted(bins):
        print(f"| {s} | {bins[s][0]} | {bins[s][1]} |")
    data = "\n".join(f"{s} {ok} {bad}" for s, (ok, bad) in sorted(bins.items()))
    gnuplot(f"""set terminal pngcairo size 640,400 noenhanced
set output '{img}/fault.png'
set title 'One of 4 replicas killed at t=1.5 s (sim backend)'
set xlabel 'second'; set ylabel 'requests finished'; set grid
plot '-' using 1:2 with linespoints title 'completed', '-' using 1:3 with linespoints title 'failed'
{data}
e
{data}
e
""")


def sweep():
    rows = []
    # The cache sizes results.sh ran, from the file names (round_robin-<blocks>.json).
    names = os.listdir(f"{root}/sweep") if os.path.isdir(f"{root}/sweep") else []
    sizes = sorted(int(n[len("round_robin-"):-len(".json")]) for n in names
                   if n.startswith("round_robin-") and n.endswith(".json"))
    for kv in sizes:
        rr = load(f"{root}/sweep/round_robin-{kv}.json")
        px = load(f"{root}/sweep/prefix-{kv}.json")
        if rr and px and hit(rr) > 0:
            rows.append((kv, rr, px))
    if not rows:
        return
    print("\n### C64's workload at 192 clients, by cache size (sim backend)\n")
    print("| KV blocks per replica | hit rate round_robin / prefix | hit rate ratio | "
          "output tokens/s round_robin / prefix | throughput ratio | failed |")
    print("|---|---|---|---|---|---|")
    data = []
    for kv, rr, px in rows:
        h = hit(px) / hit(rr)
        t = px["output_token_throughput"] / rr["output_token_throughput"]
        data.append(f"{kv} {h:.3f} {t:.3f}")
        print(f"| {kv} | {hit(rr):.3f} / {hit(px):.3f} | {h:.2f}x | "
              f"{rr['output_token_throughput']:.0f} / {px['output_token_throughput']:.0f} | "
              f"{t:.2f}x | {rr['failed'] + px['failed']} |")
    points = "\n".join(data)
    gnuplot(f"""set terminal pngcairo size 640,400 noenhanced
set output '{img}/sweep.png'
set title 'prefix over round_robin, by KV blocks per replica (sim backend)'
set xlabel 'KV blocks per replica'; set ylabel 'ratio'; set grid; set key top right
set yrange [1:5.2]
plot '-' using 1:2 with linespoints title 'hit rate ratio', \\
     '-' using 1:3 with linespoints title 'throughput ratio', \\
     3.8 with lines dashtype 2 title 'hit rate target 3.8x', \\
     1.9 with lines dashtype 3 title 'throughput target 1.9x'
{points}
e
{points}
e
""")


scaling()
routing("C", "shared-prefix", "C. Routing effect, shared-prefix", "routing-shared-prefix")
routing("C", "multi-turn", "C. Routing effect, multi-turn", "routing-multi-turn")
routing("C64", "shared-prefix", "C. Routing effect, default shared-prefix workload",
        "routing-shared-prefix-64")
routing("trace", "synthetic", "Trace replay, Mooncake synthetic", "trace-synthetic")
routing("trace", "conversation", "Trace replay, Mooncake conversation", "trace-conversation")
sweep()
fault()
routing("h200", "routing", "Shared-prefix on one H200", "routing-h200", base="bench/results",
        label="cuda backend")
