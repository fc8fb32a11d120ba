#!/usr/bin/env python3
"""Fails when a statement puts co_await inside ?:, && or ||, or a ?: inside a co_await's operands.

GCC 12 miscompiles those (temporaries destroyed twice, a double free found by valgrind): each
co_await goes in a statement of its own, with its arguments worded before it.
usage: scripts/check-coawait.py [ROOT]
"""
import pathlib
import re
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
bad = []
for folder in ("common", "router", "replica", "bench", "tests"):
    # Headers too: a coroutine defined in one (a test server's handler, say) is compiled the same.
    for path in sorted(p for ext in ("*.cpp", "*.hpp") for p in (root / folder).rglob(ext)):
        text = path.read_text()
        code = re.sub(r'"(\\.|[^"\\\n])*"', '""', text)          # strings
        code = re.sub(r"'(\\.|[^'\\\n])'", "''", code)           # characters
        code = re.sub(r"//[^\n]*", "", code)                     # comments
        for m in re.finditer(r"\bco_await\b", code):
            start = max(code.rfind(c, 0, m.start()) for c in ";{}")
            end = code.find(";", m.end())
            statement = code[start + 1:end]
            head = statement[:statement.find("co_await")]
            # `if (cond) co_await x;` is fine: only what the co_await is part of counts.
            if re.match(r"\s*(if|while|for)\s*\(", head):
                depth, i = 0, head.find("(")
                for j in range(i, len(head)):
                    depth += head[j] == "("
                    depth -= head[j] == ")"
                    if depth == 0:
                        head = head[j + 1:]
                        statement = statement[j + 1:]
                        break
            if re.search(r"\?|&&|\|\|", statement):
                line = code.count("\n", 0, m.start()) + 1
                bad.append(f"{path.relative_to(root)}:{line}: {' '.join(statement.split())[:120]}")
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
