#!/usr/bin/env python3
"""Writes docs/results-peers.md and its charts (docs/img/peers-*.png, gnuplot) from the
lanes-bench simulate results of bench/scripts/peers.sh. Every figure is modelled (the simulator's
virtual clock and the sim cost model), never measured on hardware.
   bench/scripts/peers_report.py [--no-charts] RESULTS_DIR [OUT.md]
--no-charts writes the page alone (its chart links unchanged), without gnuplot."""
import glob
import gzip
import json
import os
import re
import statistics
import subprocess
import sys

args = [a for a in sys.argv[1:] if a != "--no-charts"]
charts = len(args) == len(sys.argv) - 1
if not args:
    sys.exit(__doc__)
root = args[0]
out_md = args[1] if len(args) > 1 else "docs/results-peers.md"
img = "docs/img"
os.makedirs(img, exist_ok=True)
LANES = "prefix"  # lanes-router's default policy
PEERS = ["sglang_cache_aware", "sglang_prefix_hash", "kubeai_chwbl", "llmd_scorer", "dynamo_kv",
         "prodstack_prefixaware", "power_of_two"]
# With the replicas publishing KV events: lanes' default policy reads them, and so does Dynamo's
# KV router (its default indexer); the other peers route as they do without them.
EVENTS = "+kv-events"
LANES_EV = LANES + EVENTS
PEERS_EV = [p + EVENTS if p == "dynamo_kv" else p for p in PEERS]
WORKLOADS = ["c64", "multi-turn", "mooncake-conversation", "mooncake-synthetic", "agents",
             "hot-tenant", "bursty"]
SKEWED = ["agents", "hot-tenant", "bursty"]
IMBALANCE_CAP = 1.25
# The skewed rows' targets: TTFT p99 at most this times the lowest peer's, and a hit rate at least
# the best balanced peer's less HIT_MARGIN.
P99_FACTOR = 1.25
HIT_MARGIN = 0.02
# The previous matrix, whose offered rates the recorded rows reuse (peers.sh's BASE_RATES).
BASE = os.environ.get("BASE_RATES", "bench/results/peers-20261205")


def gnuplot(script):
    if not charts:
        return
    subprocess.run(["gnuplot"], input=script, text=True, check=True)


def mean(xs):
    return sum(xs) / len(xs)


def merged(docs):
    """One row's runs over several seeds as one document: each policy's figures are their means
    (imbalance included); the KV usage over time is the first seed's."""
    first = docs[0]
    out = dict(first, seeds=len(docs), rate=mean([d["rate"] for d in docs]), results=[])
    if all("capacity_rps" in d for d in docs):
        out["capacity_rps"] = mean([d["capacity_rps"] for d in docs])
    for r in first["results"]:
        rs = [next(x for x in d["results"] if x["policy"] == r["policy"]) for d in docs]
        m = dict(r)
        m["prefix_cache_hit_rate"] = {
            k: mean([x["prefix_cache_hit_rate"][k] for x in rs])
            for k in ("measured", "ideal", "ideal_fleet")}
        for k in ("ttft_s", "e2e_s"):
            m[k] = {q: mean([x[k][q] for x in rs]) for q in ("p50", "p99")}
        for k in ("request_throughput", "imbalance"):
            m[k] = mean([x[k] for x in rs])
        if all("cache_at_decision" in x for x in rs):
            m["cache_at_decision"] = {"share_of_best": mean(
                [x["cache_at_decision"]["share_of_best"] for x in rs])}
        out["results"].append(m)
    return out


by_row = {}
# Runs as peers.sh writes them (.json) or as the tree keeps them (.json.gz).
for path in sorted(glob.glob(f"{root}/*.json") + glob.glob(f"{root}/*.json.gz")):
    name = re.sub(r"\.json(\.gz)?$", "", os.path.basename(path))
    w, rest = name.rsplit("-r", 1)
    n, load = rest.split("-l")
    load, seed = load.split("-s")  # -sSEED: one seed's run
    with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
        doc = json.load(f)
    doc.setdefault("seed", int(seed))
    by_row.setdefault((w, int(n), float(load)), []).append(doc)
runs = {k: merged(v) for k, v in by_row.items()}
if not runs:
    sys.exit(f"peers_report: no results in {root}")
seeds = min(d["seeds"] for d in runs.values())


def hit(r):
    return r["prefix_cache_hit_rate"]["measured"]


def p99(r):
    return r["ttft_s"]["p99"]


# A paired gap counts as a lead when it exceeds this many standard errors (and shows at the
# precision it is printed to); below that it is within what the seeds alone move.
CLEAR_SE = 2


def paired_gap(key, lanes, peer, gap):
    """gap(peer's run, lanes' run) over the seeds of one row, each pair on the same arrivals:
    its mean and standard error."""
    res = [{r["policy"]: r for r in d["results"]} for d in by_row[key]]
    gaps = [gap(x[peer], x[lanes]) for x in res]
    if len(gaps) < 2:
        return mean(gaps), 0.0
    return mean(gaps), statistics.stdev(gaps) / len(gaps) ** 0.5


def clear(m, se, printed):
    return abs(m) > CLEAR_SE * se and abs(m) >= printed / 2


def best_peer_gap(key, lanes, peers):
    """The peer with the lowest mean TTFT p99 against `lanes`: peer / lanes - 1, paired.
    Negative: the peer is faster."""
    res = {r["policy"]: r for r in runs[key]["results"]}
    peer = min((p for p in peers if p in res), key=lambda p: p99(res[p]))
    return (peer, *paired_gap(key, lanes, peer, lambda a, b: p99(a) / p99(b) - 1))


def best_peer_hit_gap(key, lanes, peers):
    """The balanced peer (imbalance within the cap, as the verdict's) with the highest mean hit
    rate against `lanes`: peer - lanes, paired. Positive: the peer hits more. None when no peer
    is balanced."""
    res = {r["policy"]: r for r in runs[key]["results"]}
    balanced = [p for p in peers if p in res and res[p]["imbalance"] <= IMBALANCE_CAP]
    if not balanced:
        return None
    peer = max(balanced, key=lambda p: hit(res[p]))
    return (peer, *paired_gap(key, lanes, peer, lambda a, b: hit(a) - hit(b)))


def winners(doc, lanes, peers):
    res = {r["policy"]: r for r in doc["results"]}
    contenders = {k: v for k, v in res.items() if k == lanes or k in peers}
    best_p99 = min(contenders, key=lambda k: p99(contenders[k]))
    balanced = {k: v for k, v in contenders.items() if v["imbalance"] <= IMBALANCE_CAP}
    best_hit = max(balanced, key=lambda k: hit(balanced[k])) if balanced else None
    return res, best_p99, best_hit


def has(lanes, peers):
    return all(p in {r["policy"] for r in d["results"]} for d in runs.values()
               for p in [lanes] + peers)


lines = []
emit = lines.append
emit("# lanes against the peers' routing algorithms (modelled)")
emit("")
emit("Every figure on this page is **modelled**: `lanes-bench simulate` replays each workload "
     "through N simulated replicas (the replica's own scheduler, block manager and prefix cache, "
     "the sim backend's cost model, a virtual clock) and one routing policy fed with what a live "
     "router sees (its own in-flight counts, the replicas' load as last scraped, stale after 2 s). "
     "The peers are their published algorithms with their published defaults, written for the "
     "simulator from their documentation and source descriptions (`bench/sim/peers/`, each file "
     "names its source); they are not the peers' code. The simulator agrees with live runs within "
     "the bounds shown in [results.md](results.md#simulator-against-live-runs).")
emit("")
first = next(iter(runs.values()))
emit(f"Replicas: {first['kv_blocks']} KV blocks of 16 tokens each, the sim cost model at speedup "
     f"{first['sim_speedup']:g} (Dynamo mocker's coefficients). Load: Poisson arrivals. The c64, "
     f"multi-turn and Mooncake rows run at half and 90 % of the fleet's capacity as measured for "
     f"the matrix of `{BASE}` (the closed-loop throughput of the default policy of then), at the "
     f"very request rates recorded there, so that each row compares like with like across "
     f"versions of the policies. The skewed agent workloads (`agents`, `hot-tenant`, `bursty`: "
     f"multi-tenant sessions that grow turn by turn, each arrival a waiting session's next turn or "
     f"a new session, [results.md](results.md#skewed-agent-workloads)) run at 50, 80 and "
     f"95 % of the fleet's round-robin capacity (its closed-loop throughput under round-robin). "
     f"`prefix` is lanes-router's default policy; the other lanes policies are listed for "
     f"reference. Each row ran with {seeds} seeds (the arrivals, and the generated workloads' "
     f"text, differ); every figure is the mean over the seeds, as one run's p99 over a few hundred "
     f"requests rests on its few slowest. *Cached blocks taken*: at each decision, the prompt "
     f"blocks the chosen replica's cache held over the most any replica's held (summed over the "
     f"run): below 1, the policy sent prefixes away from where they were cached, by its memory's "
     f"fault or its load rule's choice.")
emit("")
emit(f"A name ending in `{EVENTS}` ran with the replicas publishing KV events (vLLM's "
     f"BlockStored and BlockRemoved, as lanes replicas do and vLLM does with "
     f"`--kv-events-config`), each step's batch reaching the router 1 ms after the step: "
     f"`{LANES_EV}` is lanes-router's default policy with `--kv-events` on (its precise "
     f"index, [kv-events.md](kv-events.md)), `dynamo_kv{EVENTS}` Dynamo's KV router with its default, "
     f"event-fed indexer; `dynamo_kv` alone is Dynamo's approximate indexer (`--no-kv-events`). "
     f"The other peers do not read KV events in their default configurations.")
emit("")
stamp = re.search(r"(\d{4})(\d{2})(\d{2})", os.path.basename(os.path.normpath(root)))
emit(f"Results: `{root}`" + (f" ({'-'.join(stamp.groups())})" if stamp else "") +
     ". Regenerate: `bench/scripts/peers.sh` "
     "(all rows and seeds, about 15 minutes on this project's 2-core VM), which ends by running "
     "`bench/scripts/peers_report.py bench/results/peers-DATE`.")
emit("")


def matrix_rows(workloads=None):
    """The rows present, in the tables' order: (workload, replicas, load)."""
    loads = sorted({k[2] for k in runs})
    return [(w, n, load) for w in (workloads or WORKLOADS) for n in (4, 8, 16) for load in loads
            if (w, n, load) in runs]


def verdict(lanes, peers, heading, setting):
    """The verdict table of `lanes` against `peers`; returns its counts for the summary."""
    emit(f"## {heading}")
    emit("")
    emit(f"{setting} Best TTFT p99 among `{lanes}` and the peers, and best hit rate among those "
         f"with imbalance ≤ {IMBALANCE_CAP} (max requests per replica / mean); hit rates equal to "
         f"three decimals are a tie.")
    emit("")
    emit(f"The column *best peer's p99 against {lanes}* pairs the runs seed by seed (the same "
         f"arrivals): the mean over the seeds of the best peer's TTFT p99 over {lanes}'s, minus "
         f"1, and its standard error; negative means the peer is faster. *Best balanced peer's "
         f"hit rate against {lanes}* is the same for the hit rate (the peer's minus {lanes}'s; "
         f"positive means the peer hits more). A gap of at most {CLEAR_SE} standard errors is "
         f"within what the seeds alone move.")
    emit("")
    emit(f"| workload | replicas | load | best TTFT p99 | best peer's p99 against {lanes} | "
         f"best hit rate (imbalance ≤ {IMBALANCE_CAP}) | best balanced peer's hit rate against "
         f"{lanes} | {lanes}: hit / TTFT p99 |")
    emit("|---|---|---|---|---|---|---|---|")
    c = dict(wins_p99=0, wins_hit=0, total=0, clear_peer=0, clear_lanes=0, clear_hit_peer=0,
             clear_hit_lanes=0, losses=[])
    for key in matrix_rows():
        w, n, load = key
        res, bp, bh = winners(runs[key], lanes, peers)
        c["total"] += 1
        lp = res[lanes]
        p99_ok = bp == lanes or p99(lp) <= p99(res[bp])
        # Hit rates equal at the tables' three decimals are a tie.
        hit_ok = bh == lanes or (bh and lp["imbalance"] <= IMBALANCE_CAP and
                                 round(hit(lp), 3) >= round(hit(res[bh]), 3))
        c["wins_p99"] += 1 if p99_ok else 0
        c["wins_hit"] += 1 if hit_ok else 0
        if not (p99_ok and hit_ok):
            c["losses"].append((w, n, load, bp, bh, res))
        mark_p = f"**{lanes}**" if bp == lanes else f"{bp} ({p99(res[bp]) * 1000:.0f} ms)"
        peer, gap, se = best_peer_gap(key, lanes, peers)
        p_clear = clear(gap, se, 0.001)  # printed to 0.1 %
        c["clear_peer"] += 1 if p_clear and gap < 0 else 0
        c["clear_lanes"] += 1 if p_clear and gap > 0 else 0
        mark_g = f"{peer} {gap * 100:+.1f} % ± {se * 100:.1f}" + (
            "" if p_clear else " (within)")
        hg = best_peer_hit_gap(key, lanes, peers)
        mark_hg = "no balanced peer"
        if hg:
            h_peer, h_gap, h_se = hg
            h_clear = clear(h_gap, h_se, 0.001)  # printed to 0.001
            c["clear_hit_peer"] += 1 if h_clear and h_gap > 0 else 0
            c["clear_hit_lanes"] += 1 if h_clear and h_gap < 0 else 0
            mark_hg = f"{h_peer} {h_gap:+.3f} ± {h_se:.3f}" + (
                "" if h_clear else " (within)")
        mark_h = (f"**{lanes}**" if bh == lanes else
                  f"**{lanes}**, tied with {bh}" if hit_ok else
                  f"{bh} ({hit(res[bh]):.3f})")
        emit(f"| {w} | {n} | {load:g} | {mark_p} | {mark_g} | {mark_h} | {mark_hg} | "
             f"{hit(lp):.3f} / {p99(lp) * 1000:.0f} ms |")
    emit("")
    t = c["total"]
    emit(f"`{lanes}` has the best TTFT p99 in {c['wins_p99']} of {t} rows and the best balanced "
         f"hit rate in {c['wins_hit']} of {t}. Paired seed by seed, the best peer's p99 is lower "
         f"than {lanes}'s by more than {CLEAR_SE} standard errors in {c['clear_peer']} rows, "
         f"higher in {c['clear_lanes']}, and within that in the other "
         f"{t - c['clear_peer'] - c['clear_lanes']}; the best balanced peer's hit rate is higher "
         f"than {lanes}'s by more than {CLEAR_SE} standard errors in {c['clear_hit_peer']} rows, "
         f"lower in {c['clear_hit_lanes']}. Why each peer wins where it does: "
         f"[results.md](results.md#against-the-peers-algorithms-modelled).")
    emit("")
    leads(lanes, peers, t)
    return c


def leads(lanes, peers, total):
    """Every row where a peer leads `lanes` beyond the seeds' spread on TTFT p99 or (balanced) on
    hit rate, with its paired gap on the other measure: a trade when it trails there beyond the
    spread, ahead otherwise."""
    found = []
    for key in matrix_rows():
        res = {r["policy"]: r for r in runs[key]["results"]}
        for p in (p for p in peers if p in res):
            pg, pse = paired_gap(key, lanes, p, lambda a, b: p99(a) / p99(b) - 1)
            hg, hse = paired_gap(key, lanes, p, lambda a, b: hit(a) - hit(b))
            p_clear, h_clear = clear(pg, pse, 0.001), clear(hg, hse, 0.001)
            p_lead = p_clear and pg < 0
            h_lead = h_clear and hg > 0 and res[p]["imbalance"] <= IMBALANCE_CAP
            if p_lead or h_lead:
                # A lead on both is no trade: hg > 0 fails the first test, pg < 0 the second.
                trade = (h_clear and hg < 0) if p_lead else (p_clear and pg > 0)
                found.append(dict(row=key, peer=p, p99=pg, p99_se=pse, hit=hg, hit_se=hse,
                                  imbalance=res[p]["imbalance"], trade=trade))
    emit(f"### Where a peer leads `{lanes}` beyond the seeds' spread")
    emit("")
    if not found:
        emit(f"No peer leads `{lanes}` beyond the seeds' spread on TTFT p99 or on the balanced "
             f"hit rate in any row.")
        emit("")
        return
    emit(f"Each peer that leads `{lanes}` beyond {CLEAR_SE} standard errors on TTFT p99, or on "
         f"the hit rate with imbalance ≤ {IMBALANCE_CAP}, paired seed by seed as above, with the "
         f"other measure's paired gap: *trade* where it trails `{lanes}` there beyond the spread, "
         f"*ahead* where it does not.")
    emit("")
    emit(f"| workload | replicas | load | peer | its p99 against {lanes} | its hit rate against "
         f"{lanes} | its imbalance | |")
    emit("|---|---|---|---|---|---|---|---|")
    for f in found:
        w, n, load = f["row"]
        emit(f"| {w} | {n} | {load:g} | {f['peer']} | {f['p99'] * 100:+.1f} % ± "
             f"{f['p99_se'] * 100:.1f} | {f['hit']:+.3f} ± {f['hit_se']:.3f} | "
             f"{f['imbalance']:.2f} | {'trade' if f['trade'] else '**ahead**'} |")
    emit("")
    ahead = [f for f in found if not f["trade"]]
    text = (f"A peer leads `{lanes}` beyond the spread in {len({f['row'] for f in found})} of "
            f"{total} rows. ")
    if not ahead:
        text += (f"In every one it trails `{lanes}` on the other measure beyond the spread: no "
                 f"peer is ahead on both, or ahead on one and level on the other, in any row.")
    else:
        text += (f"{len(ahead)} of those leads come without a loss beyond the spread on the "
                 f"other measure (*ahead* above).")
    faster = [f for f in found if f["p99"] < 0 and f["trade"]]
    if faster:
        price = [-f["hit"] for f in faster]
        text += (f" Where a peer's p99 is lower ({len({f['row'] for f in faster})} rows), it pays "
                 f"{min(price):.3f}–{max(price):.3f} of hit rate for it.")
    emit(text)
    emit("")


setups = [(LANES, PEERS, "Who wins each row",
           "Without KV events: every router keeps its own memory of where prefixes went.")]
if has(LANES_EV, PEERS_EV):
    setups.append((LANES_EV, PEERS_EV, "Who wins each row, with KV events",
                   f"The replicas publish KV events; `{LANES_EV}` and `dynamo_kv{EVENTS}` route "
                   f"on them, the other peers as above."))
counts = [(lanes, verdict(lanes, peers, heading, setting))
          for lanes, peers, heading, setting in setups]

def targets(lanes, peers):
    """The skewed rows against their targets: TTFT p99 at most P99_FACTOR times the lowest peer's,
    hit rate at least the best balanced peer's less HIT_MARGIN, imbalance within the cap."""
    rows = matrix_rows(SKEWED)
    if not rows:
        return None
    emit(f"### `{lanes}` against its targets on the skewed workloads")
    emit("")
    emit(f"TTFT p99 at most {P99_FACTOR} times the lowest peer's, hit rate at least the best "
         f"balanced peer's (imbalance ≤ {IMBALANCE_CAP}) less {HIT_MARGIN}, and imbalance ≤ "
         f"{IMBALANCE_CAP} itself; means over the seeds.")
    emit("")
    emit(f"| workload | replicas | load | {lanes} p99 / lowest peer's | {lanes} hit rate − best "
         f"balanced peer's | {lanes} imbalance | met |")
    emit("|---|---|---|---|---|---|---|")
    met = 0
    for key in rows:
        w, n, load = key
        res = {r["policy"]: r for r in runs[key]["results"]}
        lp = res[lanes]
        low = min((p for p in peers if p in res), key=lambda p: p99(res[p]))
        balanced = [p for p in peers if p in res and res[p]["imbalance"] <= IMBALANCE_CAP]
        best = max(balanced, key=lambda p: hit(res[p])) if balanced else None
        ratio = p99(lp) / p99(res[low])
        gap = hit(lp) - hit(res[best]) if best else 0.0
        ok = (ratio <= P99_FACTOR and (best is None or gap >= -HIT_MARGIN) and
              lp["imbalance"] <= IMBALANCE_CAP)
        met += 1 if ok else 0
        emit(f"| {w} | {n} | {load:g} | {ratio:.2f} ({low}) | "
             f"{f'{gap:+.3f} ({best})' if best else 'no balanced peer'} | "
             f"{lp['imbalance']:.2f} | {'yes' if ok else '**no**'} |")
    emit("")
    emit(f"`{lanes}` meets all three targets in {met} of {len(rows)} skewed rows.")
    emit("")
    return met, len(rows)


def against_base(lanes):
    """The recorded rows against the same policy in the previous matrix, on the same arrivals."""
    base_runs = {}
    for path in glob.glob(f"{BASE}/*.json.gz") + glob.glob(f"{BASE}/*.json"):
        name = re.sub(r"\.json(\.gz)?$", "", os.path.basename(path))
        with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
            base_runs[name] = {r["policy"]: r for r in json.load(f)["results"]}
    rows = [k for k in matrix_rows() if k[0] not in SKEWED]
    if not base_runs or not rows:
        return
    emit(f"### `{lanes}` against the previous default on the recorded rows")
    emit("")
    emit(f"Each recorded row ran at the request rate of `{BASE}`, seed by seed on the same "
         f"arrivals; the gaps are this version's `{lanes}` less that matrix's (hit rate) and their "
         f"ratio less 1 (TTFT p99), mean ± standard error over the seeds. Beyond {CLEAR_SE} "
         f"standard errors a gap is more than the seeds' spread.")
    emit("")
    emit("| workload | replicas | load | hit rate then → now | gap | TTFT p99 then → now | gap | "
         "imbalance then → now |")
    emit("|---|---|---|---|---|---|---|---|")
    worse_hit = worse_p99 = 0
    for key in rows:
        w, n, load = key
        pairs = []
        for d in by_row[key]:
            seed = d.get("seed")
            now = {r["policy"]: r for r in d["results"]}
            then = base_runs.get(f"{w}-r{n}-l{load:g}-s{seed}")
            if then and lanes in then and lanes in now:
                pairs.append((then[lanes], now[lanes]))
        if not pairs:
            continue
        hg = [hit(b) - hit(a) for a, b in pairs]
        pg = [p99(b) / p99(a) - 1 for a, b in pairs]
        se = lambda xs: statistics.stdev(xs) / len(xs) ** 0.5 if len(xs) > 1 else 0.0
        h_bad = clear(mean(hg), se(hg), 0.001) and mean(hg) < 0
        p_bad = clear(mean(pg), se(pg), 0.001) and mean(pg) > 0
        worse_hit += h_bad
        worse_p99 += p_bad
        emit(f"| {w} | {n} | {load:g} | {mean([hit(a) for a, _ in pairs]):.3f} → "
             f"{mean([hit(b) for _, b in pairs]):.3f} | {mean(hg):+.3f} ± {se(hg):.3f}"
             f"{' **worse**' if h_bad else ''} | {mean([p99(a) for a, _ in pairs]) * 1000:.0f} → "
             f"{mean([p99(b) for _, b in pairs]) * 1000:.0f} ms | {mean(pg) * 100:+.1f} % ± "
             f"{se(pg) * 100:.1f}{' **worse**' if p_bad else ''} | "
             f"{mean([a['imbalance'] for a, _ in pairs]):.2f} → "
             f"{mean([b['imbalance'] for _, b in pairs]):.2f} |")
    emit("")
    emit(f"Worse beyond the seeds' spread: the hit rate in {worse_hit} of {len(rows)} rows, the "
         f"TTFT p99 in {worse_p99}.")
    emit("")


emit("## The skewed workloads and the recorded rows")
emit("")
for lanes, peers, _, _ in setups:
    targets(lanes, peers)
for lanes, _, _, _ in setups:
    against_base(lanes)

# Full tables.
emit("## Every policy, every row")
emit("")
for w in WORKLOADS:
    rows = sorted(k for k in runs if k[0] == w)
    if not rows:
        continue
    emit(f"### {w}")
    emit("")
    doc0 = runs[rows[0]]
    emit(f"Workload `{doc0['workload']}`" + (f", trace `{os.path.basename(doc0['trace_file'])}`"
                                             if doc0.get('trace_file') else "") + ".")
    emit("")
    for key in rows:
        doc = runs[key]
        _, n, load = key
        capacity = (f"capacity {doc['capacity_rps']:.1f} req/s, " if "capacity_rps" in doc
                    else "")
        emit(f"**{n} replicas, load {load:g}** ({capacity}offered "
             f"{doc['rate']:.1f} req/s; ideal hit rate {doc['results'][0]['prefix_cache_hit_rate']['ideal']:.3f}, "
             f"with one cache the fleet's size {doc['results'][0]['prefix_cache_hit_rate']['ideal_fleet']:.3f})")
        emit("")
        emit("| policy | hit rate | cached blocks taken | TTFT p50 | TTFT p99 | e2e p50 | e2e p99 | "
             "req/s | imbalance |")
        emit("|---|---|---|---|---|---|---|---|---|")
        for r in sorted(doc["results"], key=lambda r: p99(r)):
            name = f"**{r['policy']}**" if r["policy"] in (LANES, LANES_EV) else r["policy"]
            taken = r.get("cache_at_decision", {}).get("share_of_best")
            emit(f"| {name} | {hit(r):.3f} | {'' if taken is None else f'{taken:.3f}'} | "
                 f"{r['ttft_s']['p50'] * 1000:.0f} ms | "
                 f"{p99(r) * 1000:.0f} ms | {r['e2e_s']['p50']:.2f} s | {r['e2e_s']['p99']:.2f} s | "
                 f"{r['request_throughput']:.1f} | {r['imbalance']:.2f} |")
        emit("")

# Charts: hit rate and TTFT p99 per workload at 8 replicas, load 0.9.
chart_policies = [LANES] + ([LANES_EV] if has(LANES_EV, []) else []) + PEERS
for metric, title, ylabel, fn in (("hit", "prefix-cache hit rate", "hit rate", hit),
                                  ("p99", "TTFT p99", "seconds", p99)):
    data = []
    for w in WORKLOADS:
        doc = runs.get((w, 8, 0.8 if w in SKEWED else 0.9))
        if not doc:
            continue
        res = {r["policy"]: r for r in doc["results"]}
        label = w.replace("mooncake-", "")
        data.append(label + " " + " ".join(f"{fn(res[p]):.4f}" for p in chart_policies))
    if not data:
        continue
    plots = ", ".join(f"'$d' using {i + 2}:xtic(1) title '{p}'" for i, p in enumerate(chart_policies))
    gnuplot(f"""set terminal pngcairo size 900,420 noenhanced
set output '{img}/peers-{metric}.png'
set title '{title}, 8 replicas at 90 % load, the skewed workloads at 80 % (modelled: lanes-bench simulate)'
set style data histogram; set style histogram cluster gap 1; set style fill solid 0.8 border -1
set ylabel '{ylabel}'; set key outside right; set grid ytics
{"set logscale y; set yrange [0.01:*]" if metric == "p99" else "set yrange [0:*]"}
$d << EOD
{chr(10).join(data)}
EOD
plot {plots}
""")

# KV usage over time, one row.
doc = runs.get(("mooncake-conversation", 8, 0.9))
if doc:
    res = {r["policy"]: r for r in doc["results"]}
    blocks = []
    names = [p for p in (LANES, "sglang_cache_aware", "llmd_scorer", "dynamo_kv", "round_robin")
             if p in res]
    for p in names:
        blocks.append("\n".join(f"{t:.2f} {m:.4f}" for t, m, _ in res[p]["kv_usage"]) + "\ne")
    plots = ", ".join(f"'-' using 1:2 with lines title '{p}'" for p in names)
    gnuplot(f"""set terminal pngcairo size 900,380 noenhanced
set output '{img}/peers-kv-usage.png'
set title 'mean KV usage over time, Mooncake conversation, 8 replicas, 90 % load (modelled)'
set xlabel 'virtual seconds'; set ylabel 'KV usage'; set grid; set key outside right
plot {plots}
{chr(10).join(blocks)}
""")

# The trade where Dynamo's p99 leads: each policy's hit rate against its TTFT p99, 16 replicas at
# half load, one panel a workload (down and to the right is better on both).
trade = [w for w in ("multi-turn", "mooncake-conversation") if (w, 16, 0.5) in runs]
trade_policies = chart_policies + [p for p in PEERS_EV if p not in chart_policies]
if trade:
    panels = []
    for w in trade:
        res = {r["policy"]: r for r in runs[(w, 16, 0.5)]["results"]}
        names = [p for p in trade_policies if p in res]
        block = "\n\n\n".join(f"{hit(res[p]):.4f} {p99(res[p]) * 1000:.2f}" for p in names)
        plots = ", ".join(f"$d{len(panels)} index {i} using 1:2 with points pt {4 + i % 10} ps 1.8 "
                          f"lc {i + 1} title '{p}'" for i, p in enumerate(names))
        panels.append((w, block, plots))
    script = [f"set terminal pngcairo size 1000,{360 * len(panels)} noenhanced",
              f"set output '{img}/peers-trade.png'",
              f"set multiplot layout {len(panels)},1"]
    for i, (w, block, plots) in enumerate(panels):
        script += [f"$d{i} << EOD", block, "EOD",
                   f"set title '{w.replace('mooncake-', '')}, 16 replicas at half load: hit rate "
                   f"against TTFT p99 (modelled)'",
                   "set xlabel 'prefix-cache hit rate'; set ylabel 'TTFT p99, ms'; set grid; "
                   "set key outside right",
                   f"plot {plots}"]
    script.append("unset multiplot")
    gnuplot("\n".join(script) + "\n")

emit("## Charts")
emit("")
emit("![hit rate](img/peers-hit.png)")
emit("")
emit("![TTFT p99](img/peers-p99.png)")
emit("")
if trade:
    emit("Hit rate against TTFT p99 on the 16-replica half-load rows: each point is one policy, "
         "its mean over the seeds; lower and further right is better on both.")
    emit("")
    emit("![hit rate against TTFT p99](img/peers-trade.png)")
    emit("")
emit("![KV usage](img/peers-kv-usage.png)")
emit("")
# The page opens with a summary of what it holds and its headline counts, known only now.
total = counts[0][1]["total"]
summary = (f"How lanes-router's default policy `{LANES}` compares with {len(PEERS)} peers' published "
           f"routing algorithms (SGLang, llm-d, Dynamo, KubeAI, vLLM production-stack, "
           f"power-of-two) in the simulator: {total} rows of workload, replicas and load, "
           f"{seeds} seeds each, every figure modelled. ")
heads = "; ".join(
    f"{'with' if name == LANES_EV else 'without'} KV events `{name}` has the best TTFT p99 in "
    f"{c['wins_p99']} of {c['total']} rows and the best balanced hit rate in {c['wins_hit']}"
    for name, c in counts)
summary += heads[:1].upper() + heads[1:] + "."
lines[2:2] = [summary, ""]
with open(out_md, "w") as f:
    f.write("\n".join(lines))
print(f"wrote {out_md}")
for lanes, c in counts:
    print(f"{lanes}: best TTFT p99 in {c['wins_p99']}/{c['total']} rows, best balanced hit rate "
          f"in {c['wins_hit']}/{c['total']}; best peer's p99 clearly lower in {c['clear_peer']}, "
          f"clearly higher in {c['clear_lanes']}; best balanced peer's hit rate clearly higher in "
          f"{c['clear_hit_peer']}, clearly lower in {c['clear_hit_lanes']}")
    for w, n, load, bp, bh, res in c["losses"]:
        print(f"  lost: {w} r{n} l{load}: p99 {bp} {p99(res[bp]) * 1000:.0f} vs {lanes} "
              f"{p99(res[lanes]) * 1000:.0f}; hit {bh} {hit(res[bh]) if bh else 0:.3f} vs "
              f"{lanes} {hit(res[lanes]):.3f}")
