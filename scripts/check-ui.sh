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
"$root/scripts/npm-tools.sh" "$root/tests/deploy/ui" "$tools"
CHROMIUM="$chromium" node "$tools/ui_test.mjs" "$build" "$build"
