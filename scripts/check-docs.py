#!/usr/bin/env python3
"""Fails when the README or the pages of docs/ stop reading as a newcomer needs them to:

- README.md has an "## At a glance" section: a table of at most 10 rows, at most 200 words in
  the section (as rendered: link targets, table rules and markup not counted), no date and no
  internal target in it; every figure in a row (a number with a unit: ×, %, µs, ms, s, KiB,
  req/s, ...) stands verbatim in a page that row links to; every link from the README to a
  docs/ page names a file and a section (#anchor) that exist.
- Every docs/*.md page opens with a summary: the first thing after its "# Title" line is a
  paragraph of prose (not a heading, table, list, code block, image or quote) that, wrapped at
  100 columns with its link targets left out, fills 3 to 5 lines.
- docs/results.md: at most 350 lines and at most 10 lines with a date (YYYY-MM-DD);
  docs/performance.md: at most 250 lines and 8 lines with a date (as `grep -cE` counts them);
  neither keeps a diary ("The latest change", "The change before", "What did not help").
usage: scripts/check-docs.py [ROOT]
"""
import pathlib
import re
import sys
import textwrap

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
problems = []

GLANCE_ROWS, GLANCE_WORDS = 10, 200
SUMMARY_LINES, WRAP = (3, 5), 100
PAGE_LIMITS = {"results.md": (350, 10), "performance.md": (250, 8)}
DATE = re.compile(r"20[0-9]{2}-[0-9]{2}-[0-9]{2}")
DIARY = ("the latest change", "the change before", "what did not help")
LINK = re.compile(r"\[([^\]]*)\]\(([^)\s]*)\)")
# A number (1,234 / 0.97 / 3.4–4.1) and its unit. Longer units first, so "ms" is not read as "m".
FIGURE = re.compile(r"(?<![\w.,])\d[\d,]*(?:\.\d+)?(?:\s*[–-]\s*\d[\d,]*(?:\.\d+)?)?"
                    r"\s?(?:×|%|µs|ms|KiB|MiB|GiB|KB|MB|GB|req/s|tokens/s|events/s|s)(?!\w)")


def rendered(text):
    """Markdown as a reader sees it, roughly: link text without its target, no emphasis or code
    marks, no table rules."""
    text = LINK.sub(r"\1", text)
    text = re.sub(r"^\s*\|?(\s*:?-{3,}:?\s*\|)+\s*$", "", text, flags=re.M)
    return re.sub(r"[`*|]", " ", text)


def slug(heading):
    """The anchor GitHub gives a heading."""
    text = rendered(heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(page):
    return {slug(m) for m in re.findall(r"^#{1,6} (.+)$", page, flags=re.M)}


def section(text, heading):
    """The lines of the `## heading` section, or None."""
    m = re.search(rf"^## {re.escape(heading)}\s*$(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    return m.group(1) if m else None


def check_links(readme):
    for text, target in LINK.findall(readme):
        if not target.startswith("docs/") or not target.split("#")[0].endswith(".md"):
            continue
        path, _, anchor = target.partition("#")
        page = root / path
        if not page.exists():
            problems.append(f"README.md links to {path}, which does not exist")
        elif anchor and anchor not in anchors(page.read_text()):
            problems.append(f"README.md links to {target}: {path} has no section #{anchor}")


def check_glance(readme):
    body = section(readme, "At a glance")
    if body is None:
        problems.append("README.md has no '## At a glance' section")
        return
    rows = [line for line in body.splitlines() if line.lstrip().startswith("|")][2:]
    if not rows:
        problems.append("README.md: the At a glance section has no table")
    if len(rows) > GLANCE_ROWS:
        problems.append(f"README.md: the At a glance table has {len(rows)} rows "
                        f"(at most {GLANCE_ROWS})")
    words = len([w for w in rendered(body).split() if re.search(r"\w", w)])
    if words > GLANCE_WORDS:
        problems.append(f"README.md: the At a glance section has {words} words "
                        f"(at most {GLANCE_WORDS})")
    if DATE.search(body):
        problems.append("README.md: the At a glance section names a date (dates belong on the "
                        "page it links to)")
    if re.search(r"\btargets?\b|\bnot met\b", body, flags=re.I):
        problems.append("README.md: the At a glance section speaks of targets (internal goals "
                        "belong in issues, not the README)")
    for row in rows:
        pages = [root / t.split("#")[0] for _, t in LINK.findall(row)
                 if t.startswith("docs/") and t.split("#")[0].endswith(".md")]
        pages = [p for p in pages if p.exists()]
        label = row.strip("| ").split("|")[0].strip()
        if not pages:
            problems.append(f"README.md: the At a glance row '{label}' links to no docs/ page")
            continue
        texts = [p.read_text() for p in pages]
        for fig in FIGURE.findall(LINK.sub(r"\1", row)):
            if not any(fig in t for t in texts):
                names = ", ".join(p.relative_to(root).as_posix() for p in pages)
                problems.append(f"README.md: the At a glance row '{label}' says '{fig}', which "
                                f"{names} does not say verbatim")


def summary_of(name, text):
    lines = text.splitlines()
    if not lines or not lines[0].startswith("# "):
        problems.append(f"docs/{name}: the first line is not a '# Title'")
        return
    i = 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    block = []
    while i < len(lines) and lines[i].strip():
        block.append(lines[i])
        i += 1
    first = block[0].lstrip() if block else ""
    if not block or first.startswith("#"):
        problems.append(f"docs/{name}: no summary between the title and the first section "
                        f"(a paragraph of {SUMMARY_LINES[0]}-{SUMMARY_LINES[1]} lines)")
        return
    if re.match(r"(\||```|~~~|[-*+] |\d+\. |!\[|>)", first):
        problems.append(f"docs/{name}: opens with a table, list, code block, image or quote, "
                        f"not a summary paragraph")
        return
    text = " ".join(line.strip() for line in block)
    n = len(textwrap.wrap(LINK.sub(r"\1", text), WRAP))
    lo, hi = SUMMARY_LINES
    if not lo <= n <= hi:
        problems.append(f"docs/{name}: the opening summary fills {n} lines at {WRAP} columns "
                        f"(should be {lo} to {hi})")


def check_page_limits(name, text):
    max_lines, max_dates = PAGE_LIMITS[name]
    n = len(text.splitlines())
    dated = sum(1 for line in text.splitlines() if DATE.search(line))
    if n > max_lines:
        problems.append(f"docs/{name}: {n} lines (at most {max_lines})")
    if dated > max_dates:
        problems.append(f"docs/{name}: {dated} lines with a date (at most {max_dates}: one date "
                        f"a table)")
    for phrase in DIARY:
        if phrase in text.lower():
            problems.append(f"docs/{name}: says '{phrase}': how a figure changed belongs in the "
                            f"commit message, not the page")
    return n, dated


readme = (root / "README.md").read_text()
check_links(readme)
check_glance(readme)
counts = {}
for page in sorted((root / "docs").glob("*.md")):
    text = page.read_text()
    summary_of(page.name, text)
    if page.name in PAGE_LIMITS:
        counts[page.name] = check_page_limits(page.name, text)

for p in problems:
    print(f"check-docs: {p}", file=sys.stderr)
if not problems:
    pages = len(list((root / "docs").glob("*.md")))
    sizes = ", ".join(f"{k} {v[0]} lines / {v[1]} dated" for k, v in sorted(counts.items()))
    print(f"check-docs: README's At a glance within bounds and in agreement with its pages; "
          f"{pages} pages open with a summary; {sizes}")
sys.exit(1 if problems else 0)
