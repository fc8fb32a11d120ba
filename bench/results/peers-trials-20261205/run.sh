#!/usr/bin/env bash
# The 5-seed peers matrix for lanes' prefix and prefix+kv-events alone, with extra policy flags.
#   bench/results/peers-trials-20261205/run.sh OUT_DIR "FLAGS"
# then: python3 bench/results/peers-trials-20261205/cmp.py OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/../../.."
out=$1; flags=$2
mkdir -p "$out"
traces=../shared/data/mooncake
declare -A workload=(
    [c64]="--workload shared-prefix --groups 64 --prompts-per-group 16 --system-len 2048 --question-len 128 --output-len 256"
    [multi-turn]="--workload multi-turn --sessions 128 --turns 4 --turn-len 256 --output-len 128"
    [mooncake-conversation]="--workload trace --trace $traces/conversation_trace.jsonl --length-scale 0.0625"
    [mooncake-synthetic]="--workload trace --trace $traces/synthetic_trace.jsonl --length-scale 0.0625"
)
for w in ${WORKLOADS:-c64 multi-turn mooncake-conversation mooncake-synthetic}; do
  for n in ${REPLICAS:-4 8 16}; do
    for load in ${LOADS:-0.5 0.9}; do
      for seed in ${SEEDS:-1 2 3 4 5}; do
        # shellcheck disable=SC2086
        build/bench/lanes-bench simulate --policy prefix,prefix+kv-events --replicas $n --load $load --seed $seed \
          ${workload[$w]} $flags --out "$out"/$w-r$n-l$load-s$seed.json > /dev/null
      done
    done
  done
done
