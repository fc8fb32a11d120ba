#!/usr/bin/env bash
# Instructions per proxied request of lanes-router, counted by callgrind (repeatable where wall
# time is not): the router under valgrind in front of one fast backend (an nginx answering a
# canned completion), loaded by wrk with 1 KB JSON POST bodies for DURATION seconds; an idle run of
# the same length is subtracted (start-up, monitor ticks, shutdown). Every server listens on
# 127.0.0.1 only. Prints one line per binary.
#   bench/scripts/instructions.sh [ROUTER_BINARY ...]   (default: the build's lanes-router)
#   DURATION=10 bench/scripts/instructions.sh build/router/lanes-router /tmp/old/lanes-router
set -euo pipefail
cd "$(dirname "$0")/../.."
duration="${DURATION:-10}"
bins=("$@")
[ ${#bins[@]} -gt 0 ] || bins=("${LANES_BUILD_DIR:-build}/router/lanes-router")
for tool in nginx wrk valgrind callgrind_annotate; do
    command -v "$tool" >/dev/null || missing="${missing:-} $tool"
done
if [ -n "${missing:-}" ]; then
    echo "installing:${missing} (Debian packages)"
    missing=${missing/nginx/nginx-light}
    apt-get install -y -qq ${missing/callgrind_annotate/} >/dev/null
fi

source bench/scripts/lib.sh
backend_port=18201 router_port=18202
reply='{"id":"cmpl-0","object":"text_completion","created":0,"model":"m","choices":[{"index":0,"text":"hello world","logprobs":null,"finish_reason":"length","stop_reason":null}],"usage":{"prompt_tokens":1025,"total_tokens":1027,"completion_tokens":2}}'
cat > "$work/backend.conf" <<CONF
worker_processes 1;
pid $work/backend.pid;
error_log $work/backend.err;
events { worker_connections 1024; }
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
nginx -c "$work/backend.conf" -g 'daemon off;' & pids+=($!)

prompt=$(head -c 2000 /dev/zero | tr '\0' 'a')
body_prefix='{"model":"m","max_tokens":2,"prompt":"'
body_suffix='"}'
pad=$((1024 - ${#body_prefix} - ${#body_suffix}))
body="${body_prefix}${prompt:0:$pad}${body_suffix}"
cat > "$work/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
done = function(summary, latency, requests) io.write(string.format("REQUESTS %d\n", summary.requests)) end
LUA

# One run of `bin` under callgrind: "<requests> <instructions>"; no load when $2 is "idle".
measure() {
    local bin=$1 mode=$2 out="$work/callgrind.out" requests=0
    # shellcheck disable=SC2046
    valgrind --tool=callgrind --callgrind-out-file="$out" "$bin" --host 127.0.0.1 $(admin_flags "$bin") \
        --port "$router_port" --threads 1 --policy prefix --access-log false --log-level warn \
        --replica "http://127.0.0.1:$backend_port" 2>/dev/null &
    local vg=$!
    for _ in $(seq 1 100); do # callgrind starts slowly: wait for the port
        curl -sf "http://127.0.0.1:$router_port/health" >/dev/null && break
        sleep 0.1
    done
    if [ "$mode" = idle ]; then
        sleep "$duration"
    else
        requests=$(wrk -t1 -c4 -d"${duration}s" -s "$work/post.lua" \
            "http://127.0.0.1:$router_port/v1/completions" | awk '/^REQUESTS/ { print $2 }')
    fi
    kill -TERM "$vg"
    wait "$vg" || true
    echo "$requests $(callgrind_annotate "$out" 2>/dev/null |
        awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }')"
}

for bin in "${bins[@]}"; do
    read -r _ idle < <(measure "$bin" idle)
    read -r requests loaded < <(measure "$bin" load)
    python3 -c "print('%s: %d requests, %.1f k instructions per proxied request (idle %.1f M subtracted)'
        % ('$bin', $requests, ($loaded - $idle) / $requests / 1e3, $idle / 1e6))"
done
