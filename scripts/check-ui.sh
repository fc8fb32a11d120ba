#!/usr/bin/env bash
# The router's live page in headless Chromium: installs playwright-core from
# tests/deploy/ui's lock file into build folder $1 and runs tests/deploy/ui/ui_test.mjs, which
# writes its screenshots (ui-laptop.png, ui-phone.png) into $1.
#   scripts/check-ui.sh build
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: scripts/check-ui.sh BUILD_DIR}" && pwd)
chromium=${CHROMIUM:-/usr/bin/chromium}
if [ ! -x "$chromium" ]; then
    echo "check-ui: no Chromium at $chromium (Debian's chromium package): skipped" >&2
    exit 77
fi
tools="$build/ui-test"
mkdir -p "$tools"
if ! cmp -s "$root/tests/deploy/ui/package-lock.json" "$tools/package-lock.json" ||
    [ ! -d "$tools/node_modules" ]; then
    cp "$root/tests/deploy/ui/package.json" "$root/tests/deploy/ui/package-lock.json" "$tools/"
    (cd "$tools" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
cp "$root/tests/deploy/ui/ui_test.mjs" "$tools/"
CHROMIUM="$chromium" node "$tools/ui_test.mjs" "$build" "$build"
