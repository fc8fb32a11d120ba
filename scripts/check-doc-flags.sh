#!/usr/bin/env bash
# Fails when a flag a binary's --help lists is missing from a doc page.
# usage: scripts/check-doc-flags.sh BINARY DOC.md [SUBCOMMAND]
set -euo pipefail
bin=$1 doc=$2 sub=${3:-}
mapfile -t flags < <("$bin" $sub --help | grep -oE '^  --[a-z0-9-]+' | sed 's/^ *//' | grep -vx -- '--help')
if [ ${#flags[@]} -eq 0 ]; then
    echo "$bin --help listed no flags" >&2
    exit 1
fi
missing=()
for f in "${flags[@]}"; do
    grep -qF -- "$f" "$doc" || missing+=("$f")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "$doc does not describe: ${missing[*]}"
    exit 1
fi
echo "$doc describes all ${#flags[@]} flags of $(basename "$bin")${sub:+ $sub}"
