#!/usr/bin/env bash
# Installs the npm packages a test folder pins (its package.json and package-lock.json) into a
# folder of the build, again only when the lock file changed, and copies the folder's scripts
# (*.mjs) there.
#   scripts/npm-tools.sh SOURCE_DIR TOOLS_DIR
set -euo pipefail
src=${1:?usage: scripts/npm-tools.sh SOURCE_DIR TOOLS_DIR}
tools=${2:?usage: scripts/npm-tools.sh SOURCE_DIR TOOLS_DIR}
mkdir -p "$tools"
if ! cmp -s "$src/package-lock.json" "$tools/package-lock.json" || [ ! -d "$tools/node_modules" ]; then
    cp "$src/package.json" "$src/package-lock.json" "$tools/"
    (cd "$tools" && npm ci --no-audit --no-fund --loglevel=error >/dev/null)
fi
cp "$src"/*.mjs "$tools/"
