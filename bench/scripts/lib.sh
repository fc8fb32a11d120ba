# Sourced by the bench scripts: a scratch folder ($work) and the background processes started
# there ($pids), both cleaned up when the script exits, however it exits.
work=$(mktemp -d)
pids=()
cleanup() {
    for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

# The flags that keep a router's admin listener off the default port (scripts run routers side by
# side): "--admin-port 0" for a build that has one, nothing for an older one.
# (The help is read whole first: grep -q stops reading at its match, and under pipefail the
# writer's SIGPIPE would then fail the test at random.)
has_flag() { # has_flag BINARY FLAG
    local help
    help=$("$1" --help 2>/dev/null || true)
    grep -q -- "$2" <<<"$help"
}
admin_flags() {
    if has_flag "$1" --admin-port; then
        echo "--admin-port 0"
    fi
}

# admin_flags, and "--route-headers true" for a build where they are off by default: the load
# generator reads where each request went from x-lanes-replica (the per-replica counts, imbalance).
bench_router_flags() {
    admin_flags "$1"
    if has_flag "$1" --route-headers; then
        echo "--route-headers true"
    fi
}

# Waits for "<name> listening on http://host:PORT" in log file $1 ($2: the program's name) and
# prints the port.
port_of() {
    for _ in $(seq 500); do
        p=$(grep -o "$2 listening on http://[^ ]*" "$1" 2>/dev/null | head -1 | sed 's/.*://')
        [ -n "$p" ] && { echo "$p"; return 0; }
        sleep 0.02
    done
    echo "$(basename "$0"): no port in $1" >&2; cat "$1" >&2; return 1
}

# Writes $work/nginx.conf: one nginx worker on 127.0.0.1:$1 relaying (streams unbuffered, kept-alive
# upstream connections) to the upstream servers $2 ("server 127.0.0.1:P; ..."); $3, if given, is
# more of the server block (locations of its own).
nginx_front() {
    cat >"$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/nginx.err;
events { worker_connections 4096; }
http {
    access_log off;
    upstream routers { $2 keepalive 64; }
    server {
        listen 127.0.0.1:$1;
        ${3:-}
        location / {
            proxy_pass http://routers;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_buffering off;
            proxy_read_timeout 300s;
        }
    }
}
CONF
}
