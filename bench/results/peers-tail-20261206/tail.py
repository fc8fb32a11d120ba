# The conversation trace's half-load rows with KV events, split by prompt size: each policy's
# TTFT over prompts with more than 2,048 uncached tokens (two or more chunked prefill steps) and
# over the rest, and the share of the rest among its slowest 1 %. Means over the seeds.
#   python3 tail.py DIR   (DIR holding conv-rN-sSEED.json from lanes-bench simulate --per-request)
import collections, glob, json, statistics as st, sys


def quantile(v, p):
    v = sorted(v)
    return v[int(p * (len(v) - 1))]


for n in (4, 8, 16):
    acc = collections.defaultdict(lambda: collections.defaultdict(list))
    for f in sorted(glob.glob(f"{sys.argv[1]}/conv-r{n}-s*.json")):
        for r in json.load(open(f))["results"]:
            rq = r["requests"]
            uncached = lambda x: x["prompt_tokens"] - 16 * x["held_blocks"]
            long_ = [x["ttft_s"] * 1000 for x in rq if uncached(x) > 2048]
            short = [x["ttft_s"] * 1000 for x in rq if uncached(x) <= 2048]
            slow = sorted(rq, key=lambda x: -x["ttft_s"])[: len(rq) // 100]
            a = acc[r["policy"]]
            a["hit"].append(r["prefix_cache_hit_rate"]["measured"])
            a["p99"].append(r["ttft_s"]["p99"] * 1000)
            a["long mean"].append(st.mean(long_))
            a["long p99"].append(quantile(long_, 0.99))
            a["short mean"].append(st.mean(short))
            a["short p99"].append(quantile(short, 0.99))
            a["short share of slowest 1 %"].append(
                sum(1 for x in slow if uncached(x) <= 2048) / len(slow))
    for p, a in acc.items():
        print(f"{n:2d} replicas {p:20s} " + "  ".join(f"{m} {st.mean(v):.3f}" for m, v in a.items()))
