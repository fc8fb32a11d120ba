#!/usr/bin/env python3
"""Draws one lanes-bench simulate result (its --out JSON) as a PNG with gnuplot: per policy the
fleet's hit rate against its ideal and TTFT p50/p99, and the mean KV usage over virtual time.
Figures are modelled (the simulator's).
   bench/scripts/sim_chart.py RESULT.json OUT.png"""
import json
import subprocess
import sys

if len(sys.argv) != 3:
    sys.exit(__doc__)
with open(sys.argv[1]) as f:
    doc = json.load(f)
results = doc["results"]
if not results:
    sys.exit("sim_chart: no results in " + sys.argv[1])
bars = "\n".join(
    f"{r['policy']} {r['prefix_cache_hit_rate']['measured']:.4f} "
    f"{r['prefix_cache_hit_rate']['ideal_fleet']:.4f} {r['ttft_s']['p50'] * 1000:.2f} "
    f"{r['ttft_s']['p99'] * 1000:.2f}" for r in results)
kv = "\n".join("\n".join(f"{t:.3f} {m:.4f}" for t, m, _ in r["kv_usage"]) + "\ne" for r in results)
kv_plots = ", ".join(f"'-' using 1:2 with lines title '{r['policy']}'" for r in results)
title = f"{doc['workload']}, {doc['replicas']} replicas" + (
    f", load {doc['load']:g}" if "load" in doc else "")
subprocess.run(["gnuplot"], text=True, check=True, input=f"""set terminal pngcairo size 1000,900 noenhanced
set output '{sys.argv[2]}'
set multiplot layout 3,1 title '{title} (modelled: lanes-bench simulate)'
$d << EOD
{bars}
EOD
set style data histogram; set style histogram cluster gap 1; set style fill solid 0.8 border -1
set xtics rotate by -30; set grid ytics; set key outside right
set ylabel 'hit rate'; set yrange [0:1]
plot $d using 2:xtic(1) title 'hit rate', $d using 3 title 'ideal (fleet-size cache)'
set ylabel 'TTFT ms'; set yrange [0:*]
plot $d using 4:xtic(1) title 'p50', $d using 5 title 'p99'
set style data lines; unset xtics; set xtics; set xlabel 'virtual seconds'; set ylabel 'mean KV usage'
set yrange [0:1]
plot {kv_plots}
{kv}
unset multiplot
""")
print("wrote", sys.argv[2])
