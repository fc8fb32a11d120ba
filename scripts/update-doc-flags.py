#!/usr/bin/env python3
"""Rewrites the --help blocks of docs/configuration.md from the built binaries.

usage: scripts/update-doc-flags.py [BUILD_DIR]   (default: build)
Each "## lanes-X" section's first fenced block is replaced by `lanes-X --help`.
"""
import pathlib
import subprocess
import sys

root = pathlib.Path(__file__).resolve().parent.parent
build = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else root / "build")
binaries = {
    "lanes-router": [build / "router" / "lanes-router"],
    "lanes-replica": [build / "replica" / "lanes-replica"],
    "lanes-bench": [build / "bench" / "lanes-bench"],
    "lanes-bench simulate": [build / "bench" / "lanes-bench", "simulate"],
    "lanes-sse-source": [build / "bench" / "lanes-sse-source"],
    "lanes-sse-client": [build / "bench" / "lanes-sse-client"],
}
doc = root / "docs" / "configuration.md"
lines = doc.read_text().split("\n")
out, i = [], 0
while i < len(lines):
    line = lines[i]
    out.append(line)
    i += 1
    name = line[3:].strip() if line.startswith("## ") else None
    if name not in binaries:
        continue
    while i < len(lines) and lines[i] != "```":
        out.append(lines[i])
        i += 1
    if i == len(lines):
        sys.exit(f"{doc}: no fenced block under '## {name}'")
    help_text = subprocess.run([str(a) for a in binaries[name]] + ["--help"], check=True,
                               capture_output=True, text=True).stdout.rstrip("\n")
    out += ["```", help_text, "```"]
    i += 1
    while i < len(lines) and lines[i] != "```":
        i += 1
    i += 1
doc.write_text("\n".join(out))
