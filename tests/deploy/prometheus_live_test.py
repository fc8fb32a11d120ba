#!/usr/bin/env python3
"""A real Prometheus server (Debian's) with the project's scrape config and rules, in front of a
lanes-router and two sim replicas on loopback: after traffic, (a) the fleet hit-rate recording
rule equals the hit rate computed from the replicas' own counters within 1 %, and (b) every query
of every panel of deploy/grafana/lanes.json evaluates without error and returns data.
usage: prometheus_live_test.py BUILD_DIR"""
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

root = pathlib.Path(__file__).resolve().parent.parent.parent
build = pathlib.Path(sys.argv[1]).resolve()
scale = int(os.environ.get("LANES_TIME_SCALE", "1"))
work = pathlib.Path(tempfile.mkdtemp(prefix="lanes-prom-"))
procs = []


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start(args, name):
    log = open(work / f"{name}.log", "w")
    p = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    procs.append(p)
    return p


def get(url, timeout=5):
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def wait_for(pred, seconds, what):
    until = time.time() + seconds * scale
    while time.time() < until:
        try:
            if pred():
                return
        except OSError:
            pass
        time.sleep(0.1)
    raise SystemExit(f"prometheus_live_test: {what} did not happen in {seconds * scale} s")


def counters(port):
    hits = queries = 0.0
    for line in get(f"http://127.0.0.1:{port}/metrics").splitlines():
        if line.startswith("vllm:prefix_cache_hits_total"):
            hits += float(line.split()[-1])
        elif line.startswith("vllm:prefix_cache_queries_total"):
            queries += float(line.split()[-1])
    return hits, queries


def query(prom, expr):
    url = f"http://127.0.0.1:{prom}/api/v1/query?" + urllib.parse.urlencode({"query": expr})
    return json.loads(get(url))


try:
    replica_ports = [free_port(), free_port()]
    for i, p in enumerate(replica_ports):
        start([str(build / "replica/lanes-replica"), "--host", "127.0.0.1", "--port", str(p),
               "--seed", str(i), "--backend", "sim", "--sim-speedup", "8", "--kv-blocks", "1024",
               "--kv-events-endpoint", "tcp://127.0.0.1:*",
               "--kv-events-replay-endpoint", "tcp://127.0.0.1:*"], f"replica{i}")
    router_port = free_port()
    start([str(build / "router/lanes-router"), "--host", "127.0.0.1", "--port", str(router_port),
           "--admin-port", "0", "--access-log", "false", "--scrape-interval", "100ms"] +
          [a for p in replica_ports for a in ("--replica", f"http://127.0.0.1:{p}")], "router")
    wait_for(lambda: get(f"http://127.0.0.1:{router_port}/readiness") == "", 10, "router ready")

    # The project's config with this run's targets and a one-second cadence.
    prom_port = free_port()
    shutil.copytree(root / "deploy/prometheus/rules", work / "rules")
    config = (root / "deploy/prometheus/prometheus.yml").read_text()
    config = config.replace("scrape_interval: 5s", "scrape_interval: 1s")
    config = config.replace("evaluation_interval: 5s", "evaluation_interval: 1s")
    config = config.replace('["127.0.0.1:8000"]', f'["127.0.0.1:{router_port}"]')
    config = config.replace('["127.0.0.1:8001", "127.0.0.1:8002", "127.0.0.1:8003", "127.0.0.1:8004"]',
                            json.dumps([f"127.0.0.1:{p}" for p in replica_ports]))
    assert str(router_port) in config and str(replica_ports[1]) in config, "targets not replaced"
    (work / "prometheus.yml").write_text(config)
    start(["prometheus", f"--config.file={work / 'prometheus.yml'}",
           f"--storage.tsdb.path={work / 'tsdb'}", f"--web.listen-address=127.0.0.1:{prom_port}",
           "--log.level=warn"], "prometheus")
    wait_for(lambda: "Ready" in get(f"http://127.0.0.1:{prom_port}/-/ready"), 20, "prometheus ready")
    wait_for(lambda: all(t["health"] == "up" for t in json.loads(
        get(f"http://127.0.0.1:{prom_port}/api/v1/targets"))["data"]["activeTargets"]) and len(json.loads(
        get(f"http://127.0.0.1:{prom_port}/api/v1/targets"))["data"]["activeTargets"]) == 3,
        20, "every target scraped")

    before = [counters(p) for p in replica_ports]
    bench = subprocess.run([str(build / "bench/lanes-bench"), "--url", f"http://127.0.0.1:{router_port}",
                            "--workload", "shared-prefix", "--groups", "8", "--prompts-per-group", "12",
                            "--system-len", "1024", "--question-len", "64", "--output-len", "8",
                            "--concurrency", "8", "--out", str(work / "bench.json")],
                           capture_output=True, text=True, timeout=120 * scale)
    assert bench.returncode == 0, bench.stdout + bench.stderr
    after = [counters(p) for p in replica_ports]
    hits = sum(a[0] - b[0] for a, b in zip(after, before))
    queries = sum(a[1] - b[1] for a, b in zip(after, before))
    direct = hits / queries
    # A scrape that saw the end of the run, then two rule evaluations after it.
    final_queries = sum(a[1] for a in after)
    wait_for(lambda: float(query(prom_port, "sum(vllm:prefix_cache_queries_total)")["data"]["result"][0]["value"][1])
             == final_queries, 20, "a scrape of the replicas' final counters")
    time.sleep(2.5)
    got = query(prom_port, "lanes:fleet_prefix_cache_hit_rate:ratio_rate1m")
    assert got["status"] == "success", got
    assert got["data"]["result"], f"no value for the fleet hit-rate rule: {got}"
    rule = float(got["data"]["result"][0]["value"][1])
    print(f"fleet hit rate: recording rule {rule:.5f}, replicas' counters {direct:.5f} "
          f"({hits:.0f} of {queries:.0f} prompt tokens)")
    assert abs(rule - direct) <= 0.01 * direct, f"rule {rule} vs counters {direct}: more than 1 % apart"

    dashboard = json.loads((root / "deploy/grafana/lanes.json").read_text())
    failed = []
    for panel in dashboard["panels"]:
        for target in panel["targets"]:
            r = query(prom_port, target["expr"])
            if r.get("status") != "success" or not r["data"]["result"]:
                failed.append(f"{panel['title']}: {target['expr']}: {r}")
    for f in failed:
        print("panel without data:", f)
    n = sum(len(p["targets"]) for p in dashboard["panels"])
    print(f"dashboard: {n - len(failed)} of {n} panel queries returned data")
    assert not failed
finally:
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
    if os.environ.get("LANES_KEEP_TEST_FILES"):
        print("kept", work)
    else:
        shutil.rmtree(work, ignore_errors=True)
