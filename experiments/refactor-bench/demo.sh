#!/usr/bin/env bash
# The replayed demo (`kt transform naive-kernels/matmul.cu --strategy autonomous --replan 3`, answers from the
# committed cassette) with the binary from before a change and the one after, alternated (before, after, after,
# before, ...) on the same GPU in the same call, each into a fresh runs directory. Prints each run's wall time,
# speedup and exit status, then the medians.
#   BEFORE=path/to/old/kt AFTER=path/to/new/kt experiments/refactor-bench/demo.sh [PAIRS]
set -uo pipefail
cd "$(dirname "$0")/../.."
pairs=${1:-2}
before=${BEFORE:?set BEFORE to the kt binary from before the change}
after=${AFTER:?set AFTER to the kt binary after the change}
work=$(mktemp -d)
declare -A times
for ((i = 0; i < pairs; i++)); do
  order=(before after); ((i % 2)) && order=(after before)
  for which in "${order[@]}"; do
    bin=${!which}
    t0=$(date +%s.%N)
    "$bin" transform naive-kernels/matmul.cu --strategy autonomous --replan 3 \
      --llm replay:experiments/cassettes/matmul-autonomous.jsonl --out "$work/$which-$i" --json \
      > "$work/$which-$i.json" 2> "$work/$which-$i.err"
    rc=$?
    t1=$(date +%s.%N)
    wall=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}')
    times[$which]+="$wall "
    speedup=$(python3 -c 'import json,sys
try: d=json.load(open(sys.argv[1])); print(d.get("speedup") or (d.get("result") or {}).get("speedup"))
except Exception as e: print("?", e)' "$work/$which-$i.json")
    echo "$which run $i: ${wall} s, exit $rc, speedup $speedup"
    [[ $rc -eq 0 ]] || tail -5 "$work/$which-$i.err"
  done
done
for which in before after; do
  python3 -c 'import statistics,sys; ts=[float(x) for x in sys.argv[2].split()]; print(f"{sys.argv[1]:6s} demo wall s: median {statistics.median(ts):.2f} (min {min(ts):.2f}, max {max(ts):.2f}, n={len(ts)})")' "$which" "${times[$which]}"
done
