#!/usr/bin/env bash
# The checkpoint loader and forward pass against an independent numpy reference: writes tiny
# random Hugging Face checkpoints (tests/models/make_checkpoints.py: Llama 3 tied bf16 and untied
# fp32 in two shards, Qwen2 with biases, Qwen3 with q/k norms, Mistral f16), runs
# tests/models/reference.py and lanes_model_parity on two token lists each and compares logits
# and greedy continuations (tests/models/compare.py); then requires lanes_model_parity to reject
# each broken checkpoint of OUTDIR/bad with an error naming the tensor or config field; then the
# same through the HTTP API (tests/models/api_parity.py): lanes-replica --model on two of them,
# its /v1/models, greedy completions and chat text, logprobs and a streamed completion against
# the reference.
# Exit 77 (skipped) without a python3 that has numpy (Debian's python3-numpy).
#   scripts/check-model-parity.sh build
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:?usage: scripts/check-model-parity.sh BUILD_DIR}" && pwd)
python=
# $PYTHON first, then the python3 on PATH, then Debian's (a pyenv shim may come first on PATH).
for candidate in "${PYTHON:-}" python3 /usr/bin/python3; do
    if [[ -n $candidate ]] && "$candidate" -c 'import numpy' 2>/dev/null; then
        python=$candidate
        break
    fi
done
if [[ -z $python ]]; then
    echo "check-model-parity: no python3 with numpy: skipped" >&2
    exit 77
fi
tool="$build/tests/lanes_model_parity"
if [[ ! -x $tool ]]; then
    echo "check-model-parity: $tool not built" >&2
    exit 1
fi
models="$root/tests/models"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$python" "$models/make_checkpoints.py" "$work/ckpt" \
    --tokenizer "$root/tests/fixtures/tokenizer-tiny" >"$work/make.log"

# A short list that starts with <|im_start|> and 40 ids spread over the tokenizer's 439
# ((73 i + 9) mod 436): with these the reference's greedy top-two gaps stay above the default
# --gap-tol, so all 8 greedy steps are compared.
short=437,12,345,7,199
long=9,82,155,228,301,374,11,84,157,230,303,376,13,86,159,232,305,378,15,88,161,234,307,380
long+=,17,90,163,236,309,382,19,92,165,238,311,384,21,94,167,240
greedy=8

variants=0
failures=0
for dir in "$work"/ckpt/*/; do
    dir=${dir%/}
    variant=$(basename "$dir")
    [[ $variant == bad ]] && continue
    variants=$((variants + 1))
    line="$variant:"
    ok=1
    for tokens in "$short" "$long"; do
        count=$(tr ',' '\n' <<<"$tokens" | wc -l)
        label="$variant, $count tokens"
        if ! "$python" "$models/reference.py" "$dir" --tokens "$tokens" --greedy "$greedy" \
            >"$work/reference.json"; then
            echo "FAIL $label: reference.py failed" >&2
            ok=0
            continue
        fi
        if ! "$tool" --model "$dir" --tokens "$tokens" --greedy "$greedy" \
            >"$work/lanes.json" 2>"$work/lanes.err"; then
            echo "FAIL $label: lanes_model_parity failed:" >&2
            cat "$work/lanes.err" >&2
            ok=0
            continue
        fi
        if ! result=$("$python" "$models/compare.py" --reference "$work/reference.json" \
            --lanes "$work/lanes.json" --name "$label"); then
            ok=0
            continue
        fi
        line+=" [$count tokens] ${result#"$label: "}"
    done
    if ((ok)); then
        echo "$line"
    else
        echo "$variant: FAILED" >&2
        failures=$((failures + 1))
    fi
done

# Broken checkpoints: a clean non-zero exit (not a crash) and an error naming the problem.
while IFS=$'\t' read -r variant expect; do
    [[ -z $variant || $variant == \#* ]] && continue
    variants=$((variants + 1))
    dir="$work/ckpt/bad/$variant"
    rc=0
    "$tool" --model "$dir" --tokens 1 >/dev/null 2>"$work/lanes.err" || rc=$?
    named=0
    IFS='|' read -r -a strings <<<"$expect"
    for s in "${strings[@]}"; do
        if grep -qF -- "$s" "$work/lanes.err"; then
            named=1
        fi
    done
    if ((rc == 0 || rc >= 128)); then
        echo "FAIL bad/$variant: lanes_model_parity exited $rc, want a clean error (1..127)" >&2
        cat "$work/lanes.err" >&2
        failures=$((failures + 1))
    elif ((!named)); then
        echo "FAIL bad/$variant: the error does not name ${expect//|/ or }:" >&2
        cat "$work/lanes.err" >&2
        failures=$((failures + 1))
    else
        echo "bad/$variant: rejected (exit $rc): $(head -c 200 "$work/lanes.err" | head -n 1)"
    fi
done <"$work/ckpt/bad/expected.tsv"

# The HTTP API: lanes-replica serving two checkpoints, its answers against the reference.
api_checks=0
replica="$build/replica/lanes-replica"
if [[ ! -x $replica ]]; then
    echo "FAIL api: $replica not built" >&2
    failures=$((failures + 1))
else
    rc=0
    "$python" "$models/api_parity.py" --replica "$replica" --summary "$work/api.summary" \
        "$work/ckpt/llama3-tied-bf16" "$work/ckpt/qwen3-qknorm-fp32" || rc=$?
    api_failures=0
    if [[ -s $work/api.summary ]]; then
        read -r api_checks api_failures <"$work/api.summary"
    fi
    if ((rc != 0 && api_failures == 0)); then
        echo "FAIL api: api_parity.py exited $rc" >&2
        api_failures=1
    fi
    failures=$((failures + api_failures))
fi

echo "model parity: $variants variants, $api_checks API checks, $failures failures"
((failures == 0)) || exit 1
