#!/usr/bin/env python3
"""Drives mixed traffic through a lanes router for a fixed time and samples what it holds.

usage: soak.py --router URL --router-pid PID --replica-cmd CMD --replica-ports P1,P2,...
               --minutes N --out DIR [--spare-port P]

Traffic (loopback only, bounded by --minutes): whole answers and streams from a few shared
prompts, clients that leave mid-stream, bad input (not JSON, duplicate fields, oversized nesting,
malformed framing). Churn: one replica killed and restarted every --kill-every seconds, a spare
replica added and removed through the admin API every --churn-every seconds. Every 10 s the
router's RSS, open file descriptors and /metrics size are written to DIR/samples.csv; DIR/soak.json
holds the totals and the slopes after warm-up, DIR/soak.svg the plot.
"""
import argparse
import http.client
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

parser = argparse.ArgumentParser()
parser.add_argument("--router", required=True)
parser.add_argument("--admin", required=True, help="the router's admin listener")
parser.add_argument("--router-pid", type=int, required=True)
parser.add_argument("--replica-cmd", required=True, help="command line with {port} for the port")
parser.add_argument("--replica-ports", required=True)
parser.add_argument("--replica-pids", required=True)
parser.add_argument("--spare-port", type=int, default=0)
parser.add_argument("--minutes", type=float, default=30)
parser.add_argument("--clients", type=int, default=6)
parser.add_argument("--kill-every", type=float, default=180)
parser.add_argument("--churn-every", type=float, default=60)
parser.add_argument("--warmup-minutes", type=float, default=5)
parser.add_argument("--out", required=True)
args = parser.parse_args()

u = urllib.parse.urlparse(args.router)
HOST, PORT = u.hostname, u.port
assert HOST in ("127.0.0.1", "::1", "localhost"), "loopback only"
a = urllib.parse.urlparse(args.admin)
ADMIN_HOST, ADMIN_PORT = a.hostname, a.port
assert ADMIN_HOST in ("127.0.0.1", "::1", "localhost"), "loopback only"
end_at = time.time() + args.minutes * 60
lock = threading.Lock()
counts = {}


def count(key):
    with lock:
        counts[key] = counts.get(key, 0) + 1


PROMPTS = ["system prompt %d: " % g + "x" * 600 for g in range(8)]


def whole(conn):
    body = json.dumps({"model": "lanes-tiny", "prompt": random.choice(PROMPTS) + str(random.random()),
                       "max_tokens": 8, "ignore_eos": True})
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    data = r.read()
    if r.status == 200 and json.loads(data).get("choices"):
        count("whole_ok")
    else:
        # A whole answer never started before it failed: each one is a lost request.
        count("whole_lost_%d" % r.status)


def stream(conn, leave_early):
    body = json.dumps({"model": "lanes-tiny", "prompt": random.choice(PROMPTS), "max_tokens": 16,
                       "stream": True, "ignore_eos": True})
    conn.request("POST", "/v1/completions", body, {"Content-Type": "application/json"})
    r = conn.getresponse()
    if r.status != 200:
        r.read()
        count("stream_refused_%d" % r.status)
        return
    if leave_early:
        r.read(64)
        conn.close()
        count("stream_left")
        return
    data = r.read()
    count("stream_ok" if data.rstrip().endswith(b"data: [DONE]") else "stream_cut")


BAD = [
    b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\n{nope",
    b'POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 36\r\n\r\n{"prompt":"a","prompt":"b","x":1234}',
    b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    b"POST /v1/completions HTTP/1.1\r\nHost: t\r\nContent-Length: 200\r\n\r\n" + b"[" * 200,
    b"GET /health HTTP/1.1\r\nX-Fold: a\r\n b\r\nHost: t\r\n\r\n",
    b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + os.urandom(64),
]


def bad_input():
    with socket.create_connection((HOST, PORT), timeout=10) as s:
        s.sendall(random.choice(BAD))
        reply = s.recv(256)
        status = reply.split(b" ")[1].decode() if reply.startswith(b"HTTP/1.1 ") else "none"
        count("bad_input_%s" % status)


def client(seed):
    random.seed(seed)
    conn = None
    while time.time() < end_at:
        try:
            if conn is None:
                conn = http.client.HTTPConnection(HOST, PORT, timeout=60)
            kind = random.random()
            if kind < 0.45:
                whole(conn)
            elif kind < 0.8:
                stream(conn, leave_early=False)
            elif kind < 0.9:
                stream(conn, leave_early=True)
                conn = None
            else:
                bad_input()
        except (OSError, http.client.HTTPException) as e:
            count("client_error_" + type(e).__name__)
            conn = None
            time.sleep(0.05)


ports = [int(p) for p in args.replica_ports.split(",")]
replica_pids = [int(p) for p in args.replica_pids.split(",")]
extra_procs = []


def start_replica(port):
    p = subprocess.Popen(args.replica_cmd.format(port=port), shell=True, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    extra_procs.append(p)
    return p.pid


def admin(method, path):
    try:
        c = http.client.HTTPConnection(ADMIN_HOST, ADMIN_PORT, timeout=10)
        c.request(method, path, "", {"Content-Type": "application/json"})
        r = c.getresponse()
        r.read()
        count("admin_%s_%d" % (method.lower(), r.status))
    except OSError:
        count("admin_error")


def churn():
    next_kill = time.time() + args.kill_every
    next_churn = time.time() + args.churn_every
    victim = 0
    spare_pid = start_replica(args.spare_port) if args.spare_port else 0
    spare_in = False
    while time.time() < end_at:
        time.sleep(1)
        now = time.time()
        if now >= next_kill:
            next_kill += args.kill_every
            i = victim % len(ports)
            victim += 1
            try:
                os.killpg(replica_pids[i], signal.SIGKILL)
            except OSError:
                try:
                    os.kill(replica_pids[i], signal.SIGKILL)
                except OSError:
                    pass
            count("replica_killed")
            time.sleep(2)
            replica_pids[i] = start_replica(ports[i])
        if spare_pid and now >= next_churn:
            next_churn += args.churn_every
            url = urllib.parse.quote("http://127.0.0.1:%d" % args.spare_port, safe="")
            admin("DELETE" if spare_in else "POST", "/admin/replicas?url=" + url)
            spare_in = not spare_in


def read_status(field):
    with open("/proc/%d/status" % args.router_pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


samples = []


def sample():
    start = time.time()
    while time.time() < end_at:
        try:
            fds = len(os.listdir("/proc/%d/fd" % args.router_pid))
            rss = read_status("VmRSS")
        except OSError:
            count("router_gone")
            return
        try:
            c = http.client.HTTPConnection(HOST, PORT, timeout=10)
            c.request("GET", "/metrics")
            metrics = len(c.getresponse().read())
        except OSError:
            metrics = -1
        with lock:
            samples.append((round(time.time() - start, 1), rss, fds, metrics, dict(counts)))
        time.sleep(10)


os.makedirs(args.out, exist_ok=True)
threads = [threading.Thread(target=client, args=(i,)) for i in range(args.clients)]
threads += [threading.Thread(target=churn), threading.Thread(target=sample)]
for t in threads:
    t.start()
for t in threads:
    t.join()
for p in extra_procs:
    try:
        os.killpg(p.pid, signal.SIGTERM)
    except OSError:
        pass

with open(os.path.join(args.out, "samples.csv"), "w") as f:
    f.write("seconds,rss_kb,fds,metrics_bytes,requests\n")
    for t, rss, fds, m, c in samples:
        f.write("%s,%d,%d,%d,%d\n" % (t, rss, fds, m, sum(v for k, v in c.items()
                                                         if k.startswith(("whole", "stream")))))


def slope_per_10min(column):
    pts = [(s[0], s[column]) for s in samples if s[0] >= args.warmup_minutes * 60 and s[column] > 0]
    if len(pts) < 3:
        return None
    n = len(pts)
    mx = sum(p[0] for p in pts) / n
    my = sum(p[1] for p in pts) / n
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    b = sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx
    return {"mean": my, "slope_per_10min": b * 600, "percent_per_10min": 100 * b * 600 / my}


alive = True
try:
    os.kill(args.router_pid, 0)
except OSError:
    alive = False
lost = sum(v for k, v in counts.items() if k.startswith("whole_lost"))
summary = {
    "minutes": args.minutes,
    "router_alive_at_end": alive,
    "counts": counts,
    "whole_answers_lost": lost,
    "rss_kb": slope_per_10min(1),
    "fds": slope_per_10min(2),
    "metrics_bytes": slope_per_10min(3),
    "samples": len(samples),
}
with open(os.path.join(args.out, "soak.json"), "w") as f:
    json.dump(summary, f, indent=2)


def svg():
    w, h, pad = 720, 260, 40
    if not samples:
        return ""
    tmax = max(s[0] for s in samples) or 1
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" '
           'font-size="11">' % (w, h * 3)]
    for row, (col, name, unit) in enumerate([(1, "router RSS", "MB"), (2, "open fds", ""),
                                             (3, "/metrics size", "KB")]):
        vals = [s[col] / (1024 if unit else 1) for s in samples]
        vmax = max(vals) * 1.1 or 1
        y0 = row * h
        out.append('<text x="%d" y="%d">%s (%s), 0..%.1f; soak minutes 0..%.0f</text>'
                   % (pad, y0 + 15, name, unit or "count", vmax, tmax / 60))
        out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="#999"/>'
                   % (pad, y0 + 25, w - 2 * pad, h - 50))
        pts = " ".join("%.1f,%.1f" % (pad + (w - 2 * pad) * s[0] / tmax,
                                        y0 + 25 + (h - 50) * (1 - v / vmax))
                       for s, v in zip(samples, vals))
        out.append('<polyline fill="none" stroke="#1f77b4" stroke-width="1.5" points="%s"/>' % pts)
    out.append("</svg>")
    return "\n".join(out)


with open(os.path.join(args.out, "soak.svg"), "w") as f:
    f.write(svg())
print(json.dumps(summary, indent=2))
sys.exit(0 if alive and lost == 0 else 1)
