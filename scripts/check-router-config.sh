#!/usr/bin/env bash
# A router config file is one lanes-router takes: a router started on it (on ports of its own,
# on loopback) comes up listening.
#   scripts/check-router-config.sh CONFIG.json BUILD_DIR
set -euo pipefail
config=${1:?usage: scripts/check-router-config.sh CONFIG BUILD_DIR}
bin=$(cd "${2:?usage: scripts/check-router-config.sh CONFIG BUILD_DIR}" && pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$bin/router/lanes-router" --config "$config" --host 127.0.0.1 --port 0 --admin-port 0 \
    >"$log" 2>&1 &
pid=$!
for _ in $(seq 200); do
    grep -q "lanes-router listening on" "$log" && break
    kill -0 $pid 2>/dev/null || break
    sleep 0.02
done
up=0
grep -q "lanes-router listening on" "$log" || up=1
kill $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
if [ $up -ne 0 ]; then
    echo "check-router-config: lanes-router does not start on $config:" >&2
    cat "$log" >&2
    exit 1
fi
