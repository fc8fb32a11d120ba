#!/usr/bin/env python3
"""Writes the flag tables of docs/configuration.md from the built binaries' own flag tables.

usage: scripts/update-doc-flags.py [--check | --check-help] [BUILD_DIR]   (default: build)

Between "<!-- flags: NAME -->" and "<!-- end flags -->" the page holds what `NAME --help-markdown`
prints (a table a section); the prose around those markers is left as it is.
  --check       write nothing; fail, with a diff, when the page differs from what would be
                written (the docs: ctest)
  --check-help  fail when a line of a binary's --help is wider than 100 columns, or its
                --version does not answer "NAME X.Y.Z"
"""
import difflib
import pathlib
import re
import subprocess
import sys

WIDTH = 100
root = pathlib.Path(__file__).resolve().parent.parent
args = sys.argv[1:]
mode = args.pop(0) if args and args[0].startswith("--") else None
if mode not in (None, "--check", "--check-help") or len(args) > 1:
    sys.exit(__doc__)
build = pathlib.Path(args[0] if args else root / "build")
binaries = {
    "lanes-router": [build / "router" / "lanes-router"],
    "lanes-replica": [build / "replica" / "lanes-replica"],
    "lanes-bench": [build / "bench" / "lanes-bench"],
    "lanes-bench simulate": [build / "bench" / "lanes-bench", "simulate"],
    "lanes-sse-source": [build / "bench" / "lanes-sse-source"],
    "lanes-sse-client": [build / "bench" / "lanes-sse-client"],
    "lanes-engine-bench": [build / "bench" / "lanes-engine-bench"],
    "lanes-decision-bench": [build / "bench" / "lanes-decision-bench"],
}


def run(name, flag):
    return subprocess.run([str(a) for a in binaries[name]] + [flag], check=True,
                          capture_output=True, text=True).stdout


def check_help():
    problems = []
    for name in binaries:
        for number, line in enumerate(run(name, "--help").splitlines(), 1):
            if len(line) > WIDTH:
                problems.append(f"{name} --help, line {number}: {len(line)} columns: {line}")
        version = run(name, "--version").strip()
        if not re.fullmatch(re.escape(name) + r" \d+\.\d+\.\d+( \(git [0-9a-f]+\))?", version):
            problems.append(f"{name} --version answered '{version}'")
    print("\n".join(problems) if problems else
          f"every --help fits {WIDTH} columns, every --version answers ({len(binaries)} binaries)")
    return 1 if problems else 0


def generated(page):
    out, pending, skipping = [], set(binaries), False
    for line in page.split("\n"):
        begin = re.fullmatch(r"<!-- flags: (.+) -->", line)
        if begin:
            name = begin.group(1)
            if name not in binaries:
                sys.exit(f"docs/configuration.md: no binary '{name}' (known: {', '.join(binaries)})")
            pending.discard(name)
            out += [line, "", run(name, "--help-markdown").strip("\n")]
            skipping = True
        elif line == "<!-- end flags -->":
            out.append("")
            skipping = False
        if not skipping:
            out.append(line)
    if skipping:
        sys.exit("docs/configuration.md: a '<!-- flags: ... -->' block has no '<!-- end flags -->'")
    if pending:
        sys.exit(f"docs/configuration.md has no flag table of {', '.join(sorted(pending))}")
    return "\n".join(out)


if mode == "--check-help":
    sys.exit(check_help())
doc = root / "docs" / "configuration.md"
page = doc.read_text()
new = generated(page)
if mode is None:
    doc.write_text(new)
elif new != page:
    sys.stdout.writelines(difflib.unified_diff(page.splitlines(True), new.splitlines(True),
                                               "docs/configuration.md", "generated"))
    print("docs/configuration.md differs from the binaries' flag tables: "
          "run scripts/update-doc-flags.py BUILD_DIR")
    sys.exit(1)
else:
    print("docs/configuration.md holds every binary's flag table as it is now")
