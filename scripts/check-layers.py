#!/usr/bin/env python3
"""Fails when an include inside router/ runs back up a layer (CONTRIBUTING.md, "Layers").

A unit is a folder of router/ (fleet, index, ...) or a file at its top (a header and its .cpp
together). Each has a layer; a unit may include its own files and those of lower layers only.
Also fails when a file of router/ is in no known unit, when router/config.hpp is included
outside the config reader, the app, main and tests, or when router/'s top holds more than 8 units.
usage: scripts/check-layers.py [ROOT]
"""
import pathlib
import re
import sys

LAYERS = {
    # the vocabulary and the metrics, which everything may use
    "routing": 0, "metrics": 0,
    "index": 1,          # the prefix indexes and their tables
    "fleet": 2,          # the replicas: pool, snapshot, monitor, KV-event subscriber
    "policies": 2,       # the choice, on the vocabulary and the indexes
    "request": 3,        # reading bodies, routing keys, session keys
    "admin": 3, "status_pages": 3,
    "access": 4, "ui": 4,
    "proxy": 5,          # the front, planner, dispatcher, chooser, upstream calls
    "config": 6,
    "app": 7,
    "main": 8,
}
CONFIG_USERS = {"config", "app", "main"}

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent.parent)
router = root / "router"
problems = []


# A .cpp without a header of its own that belongs to a top-level unit.
PART_OF = {"config_checks": "config"}


def unit_of(rel):
    parts = pathlib.PurePosixPath(rel).parts
    if len(parts) > 1:
        return parts[0]
    stem = pathlib.PurePosixPath(parts[0]).stem
    return PART_OF.get(stem, stem)


top_units = set()
for path in sorted(p for ext in ("*.cpp", "*.hpp") for p in router.rglob(ext)):
    rel = path.relative_to(router).as_posix()
    unit = unit_of(rel)
    if "/" not in rel:
        top_units.add(unit)
    if unit not in LAYERS:
        problems.append(f"router/{rel}: in no layer (add its unit to scripts/check-layers.py)")
        continue
    for m in re.finditer(r'#include "router/([^"]+)"', path.read_text()):
        target = unit_of(m.group(1))
        if target == unit:
            continue
        if target == "config" and unit not in CONFIG_USERS:
            problems.append(f"router/{rel}: includes router/config.hpp (only the config reader, "
                            "the app, main and tests do; take the component's own config)")
        elif LAYERS.get(target, 99) >= LAYERS[unit]:
            problems.append(f"router/{rel} ({unit}, layer {LAYERS[unit]}) includes "
                            f"router/{m.group(1)} ({target}, layer {LAYERS.get(target)})")
if len(top_units) > 8:
    problems.append(f"router/ holds {len(top_units)} units at its top (at most 8): "
                    + ", ".join(sorted(top_units)))
for p in problems:
    print(p, file=sys.stderr)
if not problems:
    print(f"check-layers: {len(top_units)} units at router/'s top, every include points down")
sys.exit(1 if problems else 0)
