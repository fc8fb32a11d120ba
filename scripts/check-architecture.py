#!/usr/bin/env python3
"""Fails when docs/architecture.md and the tree disagree: a path the page names (a file, a
folder, or a unit named without its extension) that does not exist, or a folder of router/,
common/ or replica/ that the layout table does not name.
usage: scripts/check-architecture.py [ROOT]
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
page = (root / "docs/architecture.md").read_text()
problems = []
for path in sorted(set(re.findall(r"`((?:common|router|replica|bench|tests|scripts|deploy)/"
                                  r"[A-Za-z0-9_./-]+)`", page))):
    p = root / path.rstrip("/")
    if p.exists() or any(p.with_name(p.name + ext).exists() for ext in (".hpp", ".cpp", ".cu")):
        continue
    problems.append(f"docs/architecture.md names `{path}`, which is not in the tree")
layout = page.split("## Layout", 1)[1].split("\n## ", 1)[0]
named = set(re.findall(r"`([a-z_]+(?:/[a-z_]+)*/)`", layout))
for top in ("common", "router", "replica"):
    for d in sorted(x for x in (root / top).iterdir() if x.is_dir()):
        rel = d.relative_to(root).as_posix() + "/"
        if rel not in named:
            problems.append(f"the layout table of docs/architecture.md does not name `{rel}`")
for p in problems:
    print(p, file=sys.stderr)
if not problems:
    print("check-architecture: every path docs/architecture.md names exists, every folder named")
sys.exit(1 if problems else 0)
