#!/usr/bin/env bash
# Proxy overhead: the same fast backend (an nginx returning a canned completion) behind nginx
# (least_conn, keep-alive upstream, 1 worker), HAProxy (balance leastconn, http-reuse always,
# 1 thread) and lanes-router (1 I/O thread, prefix policy), loaded by wrk with 1 KB JSON
# POST /v1/completions bodies. Runs alternate between the three, ROUNDS times; every server
# listens on 127.0.0.1 only. Prints a table and writes results to OUT (default
# build/proxy_overhead.json). BASELINE_ROUTER=path/to/another/lanes-router adds that build as a
# fourth contestant, paired with this one round by round (a change's cost, measured). TLS=1 puts
# TLS on the client side of every proxy (one certificate made here, each with OpenSSL's defaults:
# TLS 1.3, TLS_AES_256_GCM_SHA384), the backend hop staying plain. LANES_THREADS (1) sets the
# routers' --threads (the baseline's too). Each run also reads the proxy's CPU time (user +
# system, from /proc; nginx's worker) and gives it per request: the figure that does not depend
# on how fast wrk and the backend, sharing the machine, happened to be.
#   ROUNDS=3 DURATION=10s CONNECTIONS=32 [TLS=1] [LANES_THREADS=2] bench/scripts/proxy_overhead.sh
set -euo pipefail
cd "$(dirname "$0")/../.."
rounds="${ROUNDS:-3}"
duration="${DURATION:-10s}"
connections="${CONNECTIONS:-32}"
out="${OUT:-build/proxy_overhead.json}"
router_bin="${LANES_BUILD_DIR:-build}/router/lanes-router"
baseline_bin="${BASELINE_ROUTER:-}"
lanes_threads="${LANES_THREADS:-1}"

for tool in nginx haproxy wrk; do
    command -v "$tool" >/dev/null || missing="${missing:-} $tool"
done
if [ -n "${missing:-}" ]; then
    echo "installing:${missing} (Debian packages)"
    apt-get install -y -qq ${missing/nginx/nginx-light} >/dev/null
fi
[ -x "$router_bin" ] || scripts/build.sh

source bench/scripts/lib.sh

scheme=http nginx_tls="" haproxy_tls="" lanes_tls=()
if [ "${TLS:-0}" = 1 ]; then
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj /CN=bench \
        -addext subjectAltName=IP:127.0.0.1 -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null
    cat "$work/cert.pem" "$work/key.pem" >"$work/both.pem"
    scheme=https
    nginx_tls=" ssl; ssl_certificate $work/cert.pem; ssl_certificate_key $work/key.pem"
    haproxy_tls=" ssl crt $work/both.pem"
    lanes_tls=(--tls-cert "$work/cert.pem" --tls-key "$work/key.pem")
fi

backend_port=18101 nginx_port=18102 haproxy_port=18103 lanes_port=18104 baseline_port=18105
reply='{"id":"cmpl-0","object":"text_completion","created":0,"model":"m","choices":[{"index":0,"text":"hello world","logprobs":null,"finish_reason":"length","stop_reason":null}],"usage":{"prompt_tokens":1025,"total_tokens":1027,"completion_tokens":2}}'

cat > "$work/backend.conf" <<CONF
worker_processes 1;
pid $work/backend.pid;
error_log $work/backend.err;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_buffer_size 64k;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$backend_port;
        location = /health { return 200 ""; }
        location = /metrics { default_type text/plain; return 200 ""; }
        location / { default_type application/json; return 200 '$reply'; }
    }
}
CONF
cat > "$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx.err;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_buffer_size 64k;
    keepalive_requests 1000000;
    upstream replicas { least_conn; server 127.0.0.1:$backend_port; keepalive 64; }
    server {
        listen 127.0.0.1:$nginx_port$nginx_tls;
        location / {
            proxy_pass http://replicas;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
CONF
cat > "$work/haproxy.cfg" <<CONF
global
    nbthread 1
    maxconn 4096
defaults
    mode http
    timeout connect 2s
    timeout client 60s
    timeout server 60s
    http-reuse always
frontend f
    bind 127.0.0.1:$haproxy_port$haproxy_tls
    default_backend replicas
backend replicas
    balance leastconn
    server r1 127.0.0.1:$backend_port
CONF

nginx -c "$work/backend.conf" -g 'daemon off;' & pids+=($!)
declare -A pid_of
nginx -c "$work/nginx.conf" -g 'daemon off;' & pids+=($!); pid_of[nginx]=$!
haproxy -f "$work/haproxy.cfg" -q & pids+=($!); pid_of[haproxy]=$!
# shellcheck disable=SC2046
"$router_bin" --host 127.0.0.1 --port "$lanes_port" --threads "$lanes_threads" --policy prefix $(admin_flags "$router_bin") \
    --access-log false --log-level warn --replica "http://127.0.0.1:$backend_port" "${lanes_tls[@]}" & pids+=($!)
pid_of[lanes]=$!
names=(nginx haproxy lanes)
if [ -n "$baseline_bin" ]; then
    # shellcheck disable=SC2046
    "$baseline_bin" --host 127.0.0.1 --port "$baseline_port" --threads "$lanes_threads" --policy prefix $(admin_flags "$baseline_bin") \
        --access-log false --log-level warn --replica "http://127.0.0.1:$backend_port" "${lanes_tls[@]}" & pids+=($!)
    pid_of[baseline]=$!
    names+=(baseline)
fi
sleep 1
# nginx's CPU is its worker's (the master only waits).
pid_of[nginx]=$(pgrep -P "${pid_of[nginx]}" | head -1)
cpu_ticks() { # user + system clock ticks of a process, threads included
    awk '{print $14 + $15}' "/proc/$1/stat"
}
ticks_per_s=$(getconf CLK_TCK)

# 1 KB JSON body: a completion request whose prompt makes the whole body 1024 bytes.
prompt=$(head -c 2000 /dev/zero | tr '\0' 'a')
body_prefix='{"model":"m","max_tokens":2,"prompt":"'
body_suffix='"}'
pad=$((1024 - ${#body_prefix} - ${#body_suffix}))
body="${body_prefix}${prompt:0:$pad}${body_suffix}"
cat > "$work/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
done = function(summary, latency, requests)
    io.write(string.format("RESULT %.1f %.3f %.3f %d\n", summary.requests / (summary.duration / 1e6),
        latency:percentile(50) / 1000, latency:percentile(99) / 1000, summary.requests))
end
LUA

# The order turns each round (nginx haproxy lanes, then haproxy lanes nginx, ...), so that none
# of them always runs first or last after the others warmed the machine.
declare -A rps p50 p99 cpu
for round in $(seq 1 "$rounds"); do
    shift_by=$(( (round - 1) % ${#names[@]} ))
    for name in "${names[@]:shift_by}" "${names[@]:0:shift_by}"; do
        port_var="${name}_port"
        before=$(cpu_ticks "${pid_of[$name]}")
        line=$(wrk -t1 -c"$connections" -d"$duration" -s "$work/post.lua" \
            "$scheme://127.0.0.1:${!port_var}/v1/completions" | grep '^RESULT')
        after=$(cpu_ticks "${pid_of[$name]}")
        read -r _ r a b n <<<"$line"
        c=$(awk -v t=$((after - before)) -v hz="$ticks_per_s" -v n="$n" 'BEGIN {printf "%.2f", t / hz * 1e6 / n}')
        echo "round $round $name: $r req/s, p50 $a ms, p99 $b ms, $c us CPU per request"
        rps[$name]="${rps[$name]:-} $r"; p50[$name]="${p50[$name]:-} $a"; p99[$name]="${p99[$name]:-} $b"
        cpu[$name]="${cpu[$name]:-} $c"
    done
done

python3 - "$out" <<PY
import json, statistics, sys
data = {}
for name, r, a, b, c in [("nginx", "${rps[nginx]}", "${p50[nginx]}", "${p99[nginx]}", "${cpu[nginx]}"),
                         ("haproxy", "${rps[haproxy]}", "${p50[haproxy]}", "${p99[haproxy]}", "${cpu[haproxy]}"),
                         ("lanes", "${rps[lanes]}", "${p50[lanes]}", "${p99[lanes]}", "${cpu[lanes]}"),
                         ("baseline", "${rps[baseline]:-}", "${p50[baseline]:-}", "${p99[baseline]:-}", "${cpu[baseline]:-}")]:
    if not r.split():
        continue
    f = lambda s: [float(x) for x in s.split()]
    data[name] = {"rps": statistics.median(f(r)), "p50_ms": statistics.median(f(a)),
                  "p99_ms": statistics.median(f(b)), "cpu_us_per_request": statistics.median(f(c)),
                  "runs_rps": f(r), "runs_p99_ms": f(b), "runs_cpu_us": f(c)}
data["lanes_threads"] = int("$lanes_threads")
best = max(data["nginx"]["rps"], data["haproxy"]["rps"])
data["lanes_vs_best_rps"] = data["lanes"]["rps"] / best
# Paired within each round (the machine's speed drifts between rounds more than the proxies
# differ): lanes over nginx and lanes over HAProxy that round, each pair on its own (over the
# better of the two each round would be biased: the larger of two noisy figures runs high).
data["paired"] = {}
for other in [n for n in ("nginx", "haproxy", "baseline") if n in data]:
    ratios = lambda key: [l / o for l, o in zip(data["lanes"][key], data[other][key])]
    rr, pr, cr = ratios("runs_rps"), ratios("runs_p99_ms"), ratios("runs_cpu_us")
    data["paired"][other] = {"rps_ratio_median": statistics.median(rr),
                             "p99_ratio_median": statistics.median(pr),
                             "cpu_ratio_median": statistics.median(cr),
                             "rounds_lanes_ahead": sum(r >= 1.0 for r in rr),
                             "rps_ratios": rr, "p99_ratios": pr, "cpu_ratios": cr}
json.dump(data, open(sys.argv[1], "w"), indent=2)
print("%-8s %10s %8s %8s %14s" % ("proxy", "req/s", "p50 ms", "p99 ms", "CPU us / req"))
for n in [n for n in ("nginx", "haproxy", "lanes", "baseline") if n in data]:
    d = data[n]
    print("%-8s %10.0f %8.3f %8.3f %14.2f" % (n, d["rps"], d["p50_ms"], d["p99_ms"],
                                              d["cpu_us_per_request"]))
print("lanes / best of nginx, haproxy: %.2fx req/s" % data["lanes_vs_best_rps"])
for other in data["paired"]:
    pr = data["paired"][other]
    print("paired by round, median: lanes / %s %.2fx req/s, p99 %.2fx, CPU per request %.2fx; "
          "lanes ahead in %d of %d rounds"
          % (other, pr["rps_ratio_median"], pr["p99_ratio_median"], pr["cpu_ratio_median"],
             pr["rounds_lanes_ahead"], len(pr["rps_ratios"])))
PY
