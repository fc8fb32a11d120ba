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
admin_flags() {
    if "$1" --help 2>/dev/null | grep -q -- '--admin-port'; then
        echo "--admin-port 0"
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
