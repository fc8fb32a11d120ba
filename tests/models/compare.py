#!/usr/bin/env python3
"""Compares the C++ forward pass's JSON (lanes_model_parity) with the numpy reference's
(reference.py): the logits of every input position element by element, and the greedy
continuation step by step while the reference's top-two gap leaves the order unambiguous.
Fields other than "logits", "greedy" and the reference's "top2_gap" are ignored, except that
lanes' "prefill_vs_decode", when present, is reported.
Prints one line; exit 0 within tolerance, 1 (with the worst offenders on stderr) otherwise.
    tests/models/compare.py --reference REF.json --lanes LANES.json [--atol X] [--rtol Y]
                            [--gap-tol Z] [--name LABEL]

Tolerance: a logit passes when |lanes - reference| <= atol + rtol * range, range being the
reference's max - min logit at that position (logits near zero make |reference|-relative errors
meaningless; the range is the scale the softmax sees).
Why atol 1e-3 and rtol 1e-4 by default: both sides read the same bf16/f16/fp32 weights exactly;
the reference computes in float64, the C++ side in fp32 (OpenBLAS sgemm, fp32 accumulation). The
dot products here have 64 to 160 terms, so fp32 rounding gives ~sqrt(K) * 6e-8 ~ 1e-6 relative
error each; through RMSNorm, softmax, 2 layers and the head this grows to ~1e-5 of the logit
scale, i.e. ~1e-4 absolute on logits spanning +-6. The defaults allow 10-20x that. What they
catch: activations or the KV cache kept in bf16 (~4e-3 relative: ~2e-2 absolute), RoPE
frequencies off in one band (a llama3 smoothing mistake), a missing bias or norm, wrong GQA
mapping: all O(1e-2..1) differences.
Greedy: two logits may each move by the tolerance in opposite directions, so the order of the
top two is only certain where their reference gap is above twice it: --gap-tol defaults to
2 * (atol + rtol * R), R the widest logit range over the input positions. Steps are compared
up to the first whose reference gap is below that; after it the continuations may rightly
differ."""
import argparse
import json
import sys

import numpy as np


def load(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        sys.exit(f"compare.py: cannot read the {what} JSON {path}: {e}")


def fmt(x):
    return f"{x:.3g}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reference", required=True, help="reference.py's JSON")
    ap.add_argument("--lanes", required=True, help="lanes_model_parity's JSON")
    ap.add_argument("--atol", type=float, default=1e-3, help="absolute logit tolerance")
    ap.add_argument("--rtol", type=float, default=1e-4,
                    help="tolerance relative to each position's logit range")
    ap.add_argument("--gap-tol", type=float, default=None,
                    help="top-two gap under which greedy steps are no longer compared "
                         "(default 2 * (atol + rtol * widest range))")
    ap.add_argument("--name", default=None, help="label for messages (default: --lanes path)")
    args = ap.parse_args()
    name = args.name or args.lanes
    ref, got = load(args.reference, "reference"), load(args.lanes, "lanes")

    def fail(msg):
        print(f"FAIL {name}: {msg}", file=sys.stderr)
        return 1

    for key, d in (("logits", got), ("greedy", got), ("logits", ref), ("greedy", ref)):
        if key not in d:
            return fail(f"no \"{key}\" field in {'lanes' if d is got else 'reference'} JSON")
    r = np.asarray(ref["logits"], dtype=np.float64)
    try:
        g = np.asarray(got["logits"], dtype=np.float64)
    except (TypeError, ValueError):  # ragged rows, or null where the C++ side had NaN
        return fail("lanes logits are not a rectangular array of numbers")
    if r.ndim != 2 or g.shape != r.shape:
        return fail(f"lanes logits have shape {g.shape}, the reference's {r.shape} "
                    "(positions x vocab)")
    if not np.all(np.isfinite(g)):
        pos, idx = np.argwhere(~np.isfinite(g))[0]
        return fail(f"lanes logit at position {pos}, index {idx} is {g[pos, idx]}")

    span = r.max(axis=1) - r.min(axis=1)  # per position
    diff = np.abs(g - r)
    tol = args.atol + args.rtol * span[:, None]
    max_abs = float(diff.max())
    max_rel = float((diff / np.maximum(span, 1e-30)[:, None]).max())
    summary = (f"max abs diff {fmt(max_abs)} (of range {fmt(max_rel)}) over "
               f"{r.shape[0]}x{r.shape[1]} logits")
    over = np.argwhere(diff > tol)
    if len(over):
        order = sorted(over.tolist(), key=lambda pi: -diff[pi[0], pi[1]] / tol[pi[0], 0])
        for pos, idx in order[:5]:
            print(f"FAIL {name}: logit at position {pos}, index {idx}: lanes {g[pos, idx]:.7g}, "
                  f"reference {r[pos, idx]:.7g}, diff {fmt(diff[pos, idx])} > tolerance "
                  f"{fmt(tol[pos, 0])} (atol {args.atol:g} + rtol {args.rtol:g} * range "
                  f"{fmt(span[pos])})", file=sys.stderr)
        print(f"FAIL {name}: {len(over)} of {diff.size} logits over tolerance; {summary}",
              file=sys.stderr)
        return 1

    gap_tol = args.gap_tol if args.gap_tol is not None else \
        2 * (args.atol + args.rtol * float(span.max()))
    want, have = list(ref["greedy"]), list(got["greedy"])
    gaps = list(ref.get("top2_gap", [float("inf")] * len(want)))
    greedy = f"greedy agree for all {len(want)} steps"
    for step, ref_id in enumerate(want):
        if gaps[step] < gap_tol:
            greedy = (f"greedy agree up to step {step} where the top-two gap "
                      f"{fmt(gaps[step])} < tol {fmt(gap_tol)}")
            break
        if step >= len(have):
            return fail(f"lanes greedy stops after {len(have)} steps, the reference has "
                        f"{len(want)}; {summary}")
        if have[step] != ref_id:
            return fail(f"greedy step {step}: lanes chose {have[step]}, the reference {ref_id} "
                        f"(reference top-two gap {fmt(gaps[step])} >= {fmt(gap_tol)}); "
                        f"lanes {have}, reference {want}")
    extra = ""
    if isinstance(got.get("prefill_vs_decode"), (int, float)):  # lanes' own consistency figure
        extra = f"; prefill vs decode {fmt(got['prefill_vs_decode'])}"
    print(f"{args.name + ': ' if args.name else ''}{summary}; {greedy}{extra}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
