#!/usr/bin/env python3
"""Streaming at scale: lanes-router, nginx (proxy_buffering off, kept-alive upstream) and HAProxy
relaying many concurrent SSE streams from lanes-sse-source (bench/sse_source.cpp) to
lanes-sse-client (bench/sse_client.cpp), all on loopback. Each proxy runs on CPU 0 with one
worker thread; the source and the client share CPU 1. Per proxy:
 - CPU seconds per million events relayed (utime + stime from /proc, so it does not depend on
   what else shares the core) and events/s, with 1,000 and with STREAMS_MAX streams sending back
   to back (saturation: the proxy's core or the source and client's, whichever gives first), the
   median round's, and lanes' gap to each peer paired round by round;
 - latency per event at half of lanes' saturated rate, minus the same run without a proxy
   (p50/p99 added), and the proxy's CPU per event there: every proxy relays the same events at
   the same rate, so how many events one receive finds (which saturation rewards the faster
   proxy with) has no say; and lanes' gap to each peer there, paired round by round (mean and
   standard error);
 - resident memory per open stream with STREAMS_MAX slow streams open, and whether every stream
   ended without error.
Writes bench/results/streaming-DATE/streaming.json and prints a markdown table.
   bench/scripts/streaming.py [OUT_DIR]
Environment: REPEATS (3 rounds of the saturated and the paced runs), PROXIES ("lanes nginx
haproxy"), PHASES ("saturated paced held"), HALF_RATE (the paced runs' events/s; default half of
lanes' saturated rate), LANES_BUILD_DIR (build), STREAMS_MAX (9900: a proxy holds two descriptors
a stream and the hard limit here is 20,000 per process), EVENTS (events per saturated stream, 400),
PROCESSES (1: each proxy as that many processes sharing the port and CPU 0, lanes-router with
--reuse-port, nginx's workers with `reuseport`, HAProxy's own processes, whose listeners share
ports by default; with 2, 10,000 streams fit under the per-process descriptor limit), RT_CLIENT
(1: the paced runs' client runs SCHED_FIFO where chrt can set it; 0: never), RT_PROXY (0; 1: the
paced runs' proxy, whichever it is, runs SCHED_FIFO too), RAMP (5: streams the client opens a
millisecond), LANES_ARGS (more lanes-router flags)."""
import json
import os
import re
import shlex
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
subprocess.run([os.path.join(root, "scripts", "install-deps.sh"), "--bench"], check=True)
build = os.environ.get("LANES_BUILD_DIR", "build")
out_dir = sys.argv[1] if len(sys.argv) > 1 else time.strftime("bench/results/streaming-%Y%m%d")
os.makedirs(out_dir, exist_ok=True)
streams_max = int(os.environ.get("STREAMS_MAX", "9900"))
events = int(os.environ.get("EVENTS", "400"))
processes = int(os.environ.get("PROCESSES", "1"))
work = tempfile.mkdtemp()
ticks = os.sysconf("SC_CLK_TCK")
procs = []


next_port = [18200]


def free_port():
    """A free port below the ephemeral range (the client's 10k outgoing connections take ports
    there, and could take one picked by the kernel before it is listened on)."""
    while True:
        next_port[0] += 1
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", next_port[0]))
            return next_port[0]
        except OSError:
            continue
        finally:
            s.close()


def start(cmd, cpu, log, realtime=False):
    rt = ["chrt", "-f", "1"] if realtime else []
    p = subprocess.Popen([*rt, "taskset", "-c", str(cpu), *cmd], stdout=open(log, "w"),
                         stderr=subprocess.STDOUT, start_new_session=True)
    procs.append(p)
    return p


def stop(p):
    if p.poll() is None:
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


def wait_port(port, timeout=10):
    end = time.time() + timeout
    while time.time() < end:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise SystemExit(f"streaming: nothing listens on {port}")


def tree_pids(root):
    """The process and its descendants (nginx's master and worker, taskset's child)."""
    pids, frontier = [], [root]
    while frontier:
        p = frontier.pop()
        pids.append(p)
        try:
            with open(f"/proc/{p}/task/{p}/children") as f:
                frontier += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return pids


def cpu_split(root):
    """(user, system) CPU seconds of the process tree."""
    user = system = 0
    for p in tree_pids(root):
        try:
            with open(f"/proc/{p}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            user += int(fields[11])
            system += int(fields[12])
        except OSError:
            pass
    return user / ticks, system / ticks


def record_cpu(r, before, after):
    """The proxy's CPU between two cpu_split readings into the run's result r: user, system,
    their sum and the sum per million events relayed."""
    user, system = after[0] - before[0], after[1] - before[1]
    r["proxy_cpu_s"] = user + system
    r["proxy_user_s"] = user
    r["proxy_system_s"] = system
    r["cpu_s_per_million_events"] = (user + system) / max(r["events"], 1) * 1e6


def median(xs):
    """The middle value (of an even count, the mean of the middle two), as the rounds' figures are
    kept."""
    s = sorted(xs)
    h = len(s) // 2
    return s[h] if len(s) % 2 else (s[h - 1] + s[h]) / 2


def median_or_none(xs):
    return None if any(x is None for x in xs) else median(xs)


def paired_gap(mine, theirs):
    """Round by round mine / theirs - 1: its mean and standard error, or None under 2 rounds."""
    ratios = [a / b - 1 for a, b in zip(mine, theirs) if b > 0]
    if len(ratios) < 2:
        return None
    return {"mean": statistics.fmean(ratios),
            "se": statistics.stdev(ratios) / len(ratios) ** 0.5, "rounds": len(ratios)}


def cpu_s(root):
    return sum(cpu_split(root))


# The system calls counted per relayed event (perf's tracepoints, where perf can read them).
SYSCALLS = ["recvfrom", "sendto", "read", "write", "readv", "writev", "recvmsg", "sendmsg",
            "epoll_wait", "epoll_ctl", "timerfd_settime", "futex"]


def perf_start(root):
    """perf stat counting every system call of the proxy's processes, or None without perf."""
    if subprocess.run(["sh", "-c", "command -v perf"], capture_output=True).returncode != 0:
        return None
    out = f"{work}/perf-{root}.txt"
    events = ",".join(["raw_syscalls:sys_enter"] + [f"syscalls:sys_enter_{c}" for c in SYSCALLS])
    pids = ",".join(str(p) for p in tree_pids(root))
    p = subprocess.Popen(["perf", "stat", "-x", ",", "-e", events, "-p", pids, "-o", out],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    time.sleep(0.3)  # attached before the first event
    return p, out


def perf_stop(handle, events_relayed):
    if not handle:
        return {}
    p, out = handle
    p.send_signal(signal.SIGINT)
    p.wait(10)
    counts = {}
    with open(out) as f:
        for line in f:
            parts = line.strip().split(",")
            if len(parts) > 2 and parts[0].replace(".", "").isdigit():
                name = parts[2].split(":")[-1].replace("sys_enter_", "")
                counts[name] = int(float(parts[0]))
    if not counts.get("sys_enter"):
        return {}
    per = {k: v / max(events_relayed, 1) for k, v in counts.items() if v}
    return {"syscalls_per_event": per.pop("sys_enter"), "per_event_by_call": per}


def rss_kib(root):
    total = 0
    for p in tree_pids(root):
        try:
            with open(f"/proc/{p}/status") as f:
                m = re.search(r"VmRSS:\s+(\d+)", f.read())
                total += int(m.group(1)) if m else 0
        except OSError:
            pass
    return total


def source(events_per_stream, interval_us, delay_ms=0):
    port = free_port()
    p = start([f"{build}/bench/lanes-sse-source", "--port", str(port), "--events",
               str(events_per_stream), "--interval-us", str(interval_us), "--delay",
               f"{delay_ms}ms"], 1, f"{work}/source.log")
    wait_port(port)
    return p, port


def proxy(name, upstream, realtime=False):
    port = free_port()
    if name == "lanes":
        cmd = [f"{build}/router/lanes-router", "--host", "127.0.0.1", "--port", str(port),
               "--threads", "1", "--policy", "round_robin", "--admin-port", "0",
               "--access-log", "false", "--log-level", "warn", "--max-idle-connections", "1024",
               "--connect-timeout", "10s",
               "--replica", f"http://127.0.0.1:{upstream}"]
        if processes > 1:
            cmd += ["--reuse-port"]
        cmd += shlex.split(os.environ.get("LANES_ARGS", ""))
    elif name == "nginx":
        with open(f"{work}/nginx.conf", "w") as f:
            f.write(f"""worker_processes {processes};
worker_rlimit_nofile 20000;
pid {work}/nginx.pid;
error_log {work}/nginx.err;
events {{ worker_connections 19990; }}
http {{
    access_log off;
    upstream s {{ server 127.0.0.1:{upstream}; keepalive 1024; }}
    server {{
        listen 127.0.0.1:{port} backlog=4096{" reuseport" if processes > 1 else ""};
        location / {{
            proxy_pass http://s;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_read_timeout 300s;
        }}
    }}
}}
""")
        cmd = ["nginx", "-c", f"{work}/nginx.conf", "-g", "daemon off;"]
    elif name == "haproxy":
        with open(f"{work}/haproxy.cfg", "w") as f:
            f.write(f"""global
    nbthread 1
    maxconn 9990
defaults
    mode http
    timeout connect 10s
    timeout client 300s
    timeout server 300s
    http-reuse always
    # Send each event when it comes (no MSG_MORE): what interactive streams need.
    option http-no-delay
frontend f
    bind 127.0.0.1:{port}
    default_backend s
backend s
    server s1 127.0.0.1:{upstream}
""")
        cmd = ["haproxy", "-f", f"{work}/haproxy.cfg", "-q"]
    if processes > 1 and name != "nginx":  # nginx starts its own workers
        # One shell (in the process group that stop() signals) starting them side by side.
        cmd = ["sh", "-c", " & ".join([shlex.join(cmd)] * processes) + " & wait"]
    p = start(cmd, 0, f"{work}/{name}.log", realtime)
    wait_port(port)
    if name == "lanes":  # the replica's first look (health, models, load) before traffic
        # Each connection reaches one of the processes: enough answers in a row that every
        # one of them has said it is ready.
        ready_in_a_row = 0
        for _ in range(200):
            try:
                r = subprocess.run(["curl", "--noproxy", "*", "-s", "-o", "/dev/null", "-w",
                                    "%{http_code}", f"http://127.0.0.1:{port}/readiness"],
                                   capture_output=True, text=True, timeout=2)
                ready_in_a_row = ready_in_a_row + 1 if r.stdout == "200" else 0
                if ready_in_a_row >= (1 if processes == 1 else 10 * processes):
                    break
                if r.stdout == "200":
                    continue
            except subprocess.TimeoutExpired:
                ready_in_a_row = 0
            time.sleep(0.1)
    return p, port


# The paced runs' client runs SCHED_FIFO (priority 1) where chrt can set it (RT_CLIENT=0: never):
# woken by an event, it reads it at once instead of when the source, on the same core, next
# yields; without it that wait alone gave the run with no proxy a p99 of 2-3 ms. Only the paced
# runs: a real-time client that always has data would starve the source at saturation.
can_rt = subprocess.run(["chrt", "-f", "1", "true"], capture_output=True).returncode == 0
rt_client = os.environ.get("RT_CLIENT", "1") != "0" and can_rt
# RT_PROXY=1 gives the paced runs' proxy the same priority, so that no kernel thread or other
# process of normal priority takes its core while it has events to relay (it made the tail worse
# here: docs/performance.md).
rt_proxy = os.environ.get("RT_PROXY", "0") == "1" and can_rt


# Streams opened per millisecond. An opening costs the proxy about eight times an event's CPU,
# so at 5 a ms the first 0.2 s of a paced run loads every proxy past its core: the paced rounds
# report latency over the whole run and after every stream has answered (the steady phase).
ramp = int(os.environ.get("RAMP", "5"))


def client(port, streams, hold_ms=0, tag="run", realtime=False):
    out = f"{work}/{tag}.json"
    cmd = ["chrt", "-f", "1"] if realtime and rt_client else []
    cmd += ["taskset", "-c", "1", f"{build}/bench/lanes-sse-client", "--port", str(port),
            "--streams", str(streams), "--ramp", str(ramp), "--out", out]
    if hold_ms:
        cmd += ["--hold", f"{hold_ms}ms"]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True), out


SLOW_EVENT_US = 1000  # an event later than this marks its 10 ms window as slow


def finish(c, out, list_slow=False):
    c.communicate(timeout=600)
    with open(out) as f:
        r = json.load(f)
    # The client's 10 ms windows (events, slowest in us) become two figures: the share of
    # windows whose slowest event took over 1 ms, and the share of events in them. A tail made
    # of whole windows late at once is a stall of the path (a core taken by something else),
    # not one stream queueing behind the others.
    w = r.pop("windows_10ms", [])[1:-1]  # the first and last are partial
    if w:
        slow = [c for c, worst in w if worst > SLOW_EVENT_US]
        r["windows_over_1ms"] = len(slow) / len(w)
        r["events_in_windows_over_1ms"] = sum(slow) / max(1, sum(c for c, _ in w))
        # When they came (seconds from the first whole window) and how late their slowest event
        # was: a stall that recurs at a fixed period is something on the machine, not the proxy.
        # Only where the load is paced: saturated, nearly every window is slow and the list is
        # megabytes long.
        if list_slow:
            r["slow_windows"] = [[round(i * 0.01, 2), worst] for i, (c, worst) in enumerate(w)
                                 if worst > SLOW_EVENT_US]
    return r


def saturated(name, streams):
    # Every stream opens before the first events flow: they start after the ramp (5 a ms).
    src, sport = source(events, 0, delay_ms=streams // 5 + 1000)
    pxy, pport = (None, sport) if name == "direct" else proxy(name, sport)
    root = (pxy or src).pid
    before = cpu_split(root)
    counting = perf_start(root) if pxy else None
    c, out = client(pport, streams, tag=f"{name}-sat{streams}")
    r = finish(c, out)
    after = cpu_split(root)
    r.update(perf_stop(counting, r["events"]))
    for p in (pxy, src):
        if p:
            stop(p)
    record_cpu(r, before, after)
    r["proxy_core_busy"] = r["proxy_cpu_s"] / max(r["event_seconds"], 1e-9)
    return r


def paced(name, streams, rate):
    interval_us = int(streams / rate * 1e6)
    n = max(50, int(rate * 8 / streams))  # about 8 s of events
    src, sport = source(n, interval_us)
    pxy, pport = (None, sport) if name == "direct" else proxy(name, sport, rt_proxy)
    before = cpu_split(pxy.pid) if pxy else (0, 0)
    c, out = client(pport, streams, tag=f"{name}-paced", realtime=True)
    r = finish(c, out, list_slow=True)
    after = cpu_split(pxy.pid) if pxy else (0, 0)
    for p in (pxy, src):
        if p:
            stop(p)
    r["offered_events_per_s"] = rate
    if pxy:  # the same events at the same rate for every proxy: batching has no say
        record_cpu(r, before, after)
    return r


def held(name, streams):
    # Slow streams: 40 events, one every 400 ms (16 s each); memory read at 10 s, all open.
    src, sport = source(40, 400_000)
    pxy, pport = proxy(name, sport)
    base = rss_kib(pxy.pid)
    c, out = client(pport, streams, hold_ms=10_000, tag=f"{name}-held")
    line = c.stdout.readline()  # "open N" at 10 s
    rss = rss_kib(pxy.pid)
    r = finish(c, out)
    stop(pxy)
    stop(src)
    open_now = int(line.split()[1]) if line.startswith("open") else 0
    r.update({"rss_idle_kib": base, "rss_open_kib": rss, "open_at_read": open_now,
              "kib_per_stream": (rss - base) / max(open_now, 1)})
    return r


names = os.environ.get("PROXIES", "lanes nginx haproxy").split()
phases = os.environ.get("PHASES", "saturated paced held").split()
repeats = int(os.environ.get("REPEATS", "3"))
results = {"streams_max": streams_max, "events_per_stream": events, "processes": processes,
           "proxies": {}}
try:
    # The saturated runs too are repeated (REPEATS rounds, the order turned each round) and each
    # figure is the median round's: how many events a receive finds, and so the CPU an event
    # costs, moves with how the source and the client share their core.
    sat_order = names + ["direct"]
    sat_rounds = {}
    for k in range(repeats if "saturated" in phases else 0):
        for n in sat_order[k % len(sat_order):] + sat_order[:k % len(sat_order)]:
            for s in (1000, streams_max):
                r = saturated(n, s)
                sat_rounds.setdefault((n, s), []).append(r)
                print(f"{n} saturated {s}: {r['events_per_s']:.0f} ev/s, "
                      f"{r.get('cpu_s_per_million_events', 0):.2f} cpu s/M (user "
                      f"{r.get('proxy_user_s', 0):.2f} s, system {r.get('proxy_system_s', 0):.2f} s), "
                      f"{r.get('syscalls_per_event', 0):.2f} syscalls/event "
                      f"{ {k: round(v, 2) for k, v in r.get('per_event_by_call', {}).items()} }, "
                      f"failed {r['failed']}", flush=True)
    for (n, s), rs in sat_rounds.items():
        mid = sorted(rs, key=lambda x: x.get("cpu_s_per_million_events", 0))[len(rs) // 2]
        mid = dict(mid, rounds=rs)
        mid["events_per_s"] = median([x["events_per_s"] for x in rs])
        results["proxies"].setdefault(n, {})[f"saturated_{s}"] = mid
    # lanes' CPU per event against each peer's, round by round (the same order within a round).
    for (n, s), rs in sat_rounds.items():
        mine = sat_rounds.get(("lanes", s))
        if n not in ("lanes", "direct") and mine:
            gap = paired_gap([x.get("cpu_s_per_million_events", 0) for x in mine],
                             [x.get("cpu_s_per_million_events", 0) for x in rs])
            results["proxies"][n][f"saturated_{s}"]["lanes_paired_gap"] = gap
            if gap:
                print(f"lanes against {n}, saturated {s}: {gap['mean']:+.1%} ± {gap['se']:.1%} "
                      f"CPU per event over {gap['rounds']} rounds", flush=True)
    half = float(os.environ.get("HALF_RATE", "0")) or (
        0.5 * results["proxies"]["lanes"]["saturated_1000"]["events_per_s"]
        if "saturated" in phases else 30000)
    results["half_rate"] = half
    # Latency is noisy on a shared machine: REPEATS rounds, the order turned each round, and the
    # median of each figure kept (every round is in the JSON).
    order = ["direct"] + names
    rounds = {n: [] for n in order}
    for k in range(repeats if "paced" in phases else 0):
        for n in order[k % len(order):] + order[:k % len(order)]:
            r = paced(n, 1000, half)
            rounds[n].append(r)
            print(f"{n} paced at {half:.0f} ev/s: p50 {r['latency_ms']['p50']:.3f} ms, "
                  f"p90 {r['latency_ms']['p90']:.3f} ms, p99 {r['latency_ms']['p99']:.3f} ms, "
                  f"after all open ({r.get('all_open_s') or 0:.2f} s) p99 "
                  f"{(r.get('after_open_latency_ms') or {}).get('p99', float('nan')):.3f} ms, "
                  f"windows over 1 ms {r.get('windows_over_1ms', 0):.1%}, "
                  f"{r.get('cpu_s_per_million_events', 0):.2f} cpu s/M", flush=True)
    for n, rs in rounds.items():
        if rs:
            paced_result = {"rounds": rs, "latency_ms": {
                q: median([x["latency_ms"][q] for x in rs]) for q in ("p50", "p90", "p99")},
                # None when a round had a stream that never answered.
                "after_open_latency_ms": {
                    q: median_or_none([(x.get("after_open_latency_ms") or {}).get(q)
                                       for x in rs]) for q in ("p50", "p90", "p99")},
                "all_open_s": median_or_none([x.get("all_open_s") for x in rs]),
                "ramp_per_ms": ramp,
                "windows_over_1ms": median([x.get("windows_over_1ms", 0) for x in rs]),
                "client_sched": "SCHED_FIFO 1" if rt_client else "SCHED_OTHER",
                "proxy_sched": "SCHED_FIFO 1" if rt_proxy else "SCHED_OTHER"}
            if n != "direct":
                paced_result["cpu_s_per_million_events"] = median(
                    [x["cpu_s_per_million_events"] for x in rs])
            results["proxies"].setdefault(n, {})["paced"] = paced_result
    # lanes against each peer round by round (the same events at the same rate, run next to
    # each other): the mean gap in CPU per event and its standard error, which says whether a
    # difference between the medians is more than the rounds' spread.
    if "lanes" in names and len(rounds["lanes"]) > 1:
        for peer in (n for n in names if n != "lanes"):
            gap = paired_gap([x["cpu_s_per_million_events"] for x in rounds["lanes"]],
                             [x["cpu_s_per_million_events"] for x in rounds[peer]])
            if gap:
                results.setdefault("paced_cpu_lanes_vs", {})[peer] = gap
                print(f"paced CPU per event, lanes against {peer}: {gap['mean']:+.1%} "
                      f"± {gap['se']:.1%} over {gap['rounds']} rounds", flush=True)
    for n in names if "held" in phases else ():
        r = held(n, streams_max)
        results["proxies"].setdefault(n, {})["held"] = r
        print(f"{n} held {streams_max}: {r['kib_per_stream']:.1f} KiB/stream, open "
              f"{r['open_at_read']}, failed {r['failed']} {r['first_error']}", flush=True)
finally:
    for p in procs:
        stop(p)
with open(f"{out_dir}/streaming.json", "w") as f:
    json.dump(results, f, indent=1)

if phases != ["saturated", "paced", "held"]:
    print(json.dumps(results["proxies"], indent=1)[:3000])
    sys.exit(0)
d = results["proxies"]["direct"]["paced"]["latency_ms"]
print(f"\n| proxy | CPU s / M events (1k) | CPU s / M events ({streams_max}) | CPU s / M events "
      f"(paced) | events/s (1k) | core busy | added p50 | added p90 | added p99 | KiB per open stream | "
      f"{streams_max} streams held |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for n in names:
    p = results["proxies"][n]
    a, b, h = p["saturated_1000"], p[f"saturated_{streams_max}"], p["held"]
    lat = p["paced"]["latency_ms"]
    print(f"| {n} | {a['cpu_s_per_million_events']:.2f} | {b['cpu_s_per_million_events']:.2f} | "
          f"{p['paced']['cpu_s_per_million_events']:.2f} | {a['events_per_s']:,.0f} | "
          f"{a['proxy_core_busy']:.0%} | "
          f"{lat['p50'] - d['p50']:.3f} ms | {lat['p90'] - d['p90']:.3f} ms | "
          f"{lat['p99'] - d['p99']:.3f} ms | "
          f"{h['kib_per_stream']:.1f} | {h['done']}/{h['streams']} ok, {h['failed']} failed |")
print(f"\nno proxy: {results['proxies']['direct']['saturated_1000']['events_per_s']:,.0f} events/s "
      f"(1k streams); latency at {half:,.0f} events/s p50 {d['p50']:.3f} ms, p90 {d['p90']:.3f} ms, "
      f"p99 {d['p99']:.3f} ms")
print(f"results in {out_dir}/streaming.json")
