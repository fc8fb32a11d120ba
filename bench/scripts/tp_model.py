#!/usr/bin/env python3
"""Data parallelism against tensor parallelism, modelled: lanes-bench simulate with the sim cost
model's TP terms (replica/backends/sim_cost_model.hpp) and KV capacity from GPU memory left after
the weights (Llama-3-8B-sized: 16 GB of bf16 weights, 128 KiB of KV per token, 80 GB GPUs at 0.9).
 - exercise B: 4 GPUs as DP=4 x TP=1 against DP=1 x TP=4;
 - exercise D: 8 GPUs as DP=8/TP=1, DP=4/TP=2, DP=2/TP=4, DP=1/TP=8.
Throughput: a closed loop deep enough to fill every replica (max_num_seqs 256 each, 8,192 batched
tokens, vLLM's serving defaults on large GPUs). Latency: Poisson arrivals at half of the DP-only
layout's capacity, the same offered load for every layout of an exercise. Writes
bench/results/tp-DATE/*.json, docs/img/dp-tp.png and prints the markdown table.
   bench/scripts/tp_model.py [OUT_DIR]"""
import json
import os
import subprocess
import sys
import time

out = sys.argv[1] if len(sys.argv) > 1 else time.strftime("bench/results/tp-%Y%m%d")
os.makedirs(out, exist_ok=True)
bench = os.path.join(os.environ.get("LANES_BUILD_DIR", "build"), "bench", "lanes-bench")
SEQS = 256
COMMON = ["--workload", "random", "--requests", "4000", "--input-len", "1024", "--output-len",
          "256", "--policy", "least_loaded", "--gpu-memory-gb", "80", "--weights-gb", "16",
          "--max-num-seqs", str(SEQS), "--max-num-batched-tokens", "8192",
          "--max-model-len", "8192"]


def sim(dp, tp, name, extra):
    path = f"{out}/{name}.json"
    subprocess.run([bench, "simulate", "--replicas", str(dp), "--tp", str(tp), *COMMON, *extra,
                    "--out", path], check=True, stdout=subprocess.DEVNULL)
    with open(path) as f:
        doc = json.load(f)
    return doc, doc["results"][0]


def layout(dp, tp, rate):
    doc, sat = sim(dp, tp, f"dp{dp}-tp{tp}-saturated", ["--concurrency", str(dp * SEQS)])
    _, lat = sim(dp, tp, f"dp{dp}-tp{tp}-rate{rate:.1f}", ["--rate", f"{rate}"])
    return {"dp": dp, "tp": tp, "gpus": dp * tp, "tok_s": sat["output_token_throughput"],
            "rps": sat["request_throughput"], "kv_tokens": doc["kv_capacity_tokens"],
            "ttft_p50": lat["ttft_s"]["p50"], "ttft_p99": lat["ttft_s"]["p99"],
            "e2e_p50": lat["e2e_s"]["p50"], "e2e_p95": lat["e2e_s"]["p95"],
            "e2e_p99": lat["e2e_s"]["p99"], "rate": rate}


_, one = sim(1, 1, "dp1-tp1-saturated", ["--concurrency", str(SEQS)])
single = one["output_token_throughput"]


def capacity(dp):
    _, r = sim(dp, 1, f"dp{dp}-tp1-capacity", ["--concurrency", str(dp * SEQS)])
    return r["request_throughput"]


def table(rows, title):
    print(f"\n{title}\n")
    print("| layout | GPUs | output tok/s | × one GPU | KV capacity (tokens) | TTFT p50 | TTFT p99 "
          "| e2e p50 | e2e p95 | e2e p99 |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| DP={r['dp']} × TP={r['tp']} | {r['gpus']} | {r['tok_s']:.0f} | "
              f"{r['tok_s'] / single:.2f}× | {r['kv_tokens']:,} | {r['ttft_p50'] * 1000:.0f} ms | "
              f"{r['ttft_p99'] * 1000:.0f} ms | {r['e2e_p50']:.2f} s | {r['e2e_p95']:.2f} s | "
              f"{r['e2e_p99']:.2f} s |")


rate_b = 0.5 * capacity(4)
b = [layout(4, 1, rate_b), layout(2, 2, rate_b), layout(1, 4, rate_b)]
print(f"one GPU (DP=1 × TP=1): {single:.0f} output tok/s")
table(b, f"Exercise B, 4 GPUs (latency at {rate_b:.1f} req/s, half of DP=4's capacity)")
rate_d = 0.5 * capacity(8)
d = [layout(8, 1, rate_d), layout(4, 2, rate_d), layout(2, 4, rate_d), layout(1, 8, rate_d)]
table(d, f"Exercise D, 8 GPUs (latency at {rate_d:.1f} req/s, half of DP=8's capacity)")
with open(f"{out}/summary.json", "w") as f:
    json.dump({"single_gpu_tok_s": single, "B": b, "D": d}, f, indent=1)
data = "\n".join(f"\"DP{r['dp']}xTP{r['tp']}\" {r['tok_s']:.1f} {r['e2e_p95']:.3f}" for r in d)
subprocess.run(["gnuplot"], text=True, check=True, input=f"""set terminal pngcairo size 760,400 noenhanced
set output 'docs/img/dp-tp.png'
set title '8 GPUs, DP x TP (modelled: sim cost model with TP terms)'
set style data histogram; set style fill solid 0.7 border -1; set boxwidth 0.6
set ylabel 'output tokens/s'; set y2label 'e2e p95 (s)'; set y2tics; set ytics nomirror
set yrange [0:*]; set y2range [0:*]; set grid ytics; set key left top
$d << EOD
{data}
EOD
plot $d using 2:xtic(1) title 'throughput (saturated)', $d using 0:3 axes x1y2 with linespoints lw 2 pt 7 title 'e2e p95 at half of DP=8 capacity'
""")
print(f"\nresults in {out}, chart docs/img/dp-tp.png")
