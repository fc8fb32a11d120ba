#!/usr/bin/env bash
# The systemd units in deploy/systemd pass `systemd-analyze verify` without a warning, pointed at
# the binaries of build folder $1, and the router's sample config is one lanes-router takes.
#   scripts/check-systemd.sh build
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:?usage: scripts/check-systemd.sh BUILD_DIR}" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for unit in lanes-router.service lanes-replica@.service; do
    sed -e "s|/usr/local/bin/lanes-router|$bin/router/lanes-router|" \
        -e "s|/usr/local/bin/lanes-replica|$bin/replica/lanes-replica|" \
        "$root/deploy/systemd/$unit" >"$work/$unit"
done
cp "$work/lanes-replica@.service" "$work/lanes-replica@8001.service"
# verify says what is wrong on stderr and still exits 0 for most of it: any output fails.
out=$(systemd-analyze verify "$work/lanes-router.service" "$work/lanes-replica@8001.service" 2>&1) || {
    echo "$out" >&2
    exit 1
}
if [ -n "$out" ]; then
    echo "$out" >&2
    exit 1
fi
# The sample config is one lanes-router takes.
"$root/scripts/check-router-config.sh" "$root/deploy/systemd/router.json" "$bin"
