#!/usr/bin/env bash
# Issue 20's check that the kt-tuner split changed no speed: `kt tune` of naive matmul and matrixAdd (the spaces of
# experiments/RESULTS.md), the binary from before the split and the one after, alternated, each with a fresh
# module cache (so NVRTC is included), on the same GPU in the same call. Prints the median wall time of each.
#   BEFORE=path/to/old/kt AFTER=path/to/new/kt experiments/refactor-bench/run.sh [REPS]
set -uo pipefail
cd "$(dirname "$0")/../.."
reps=${1:-5}
before=${BEFORE:?set BEFORE to the kt binary from before the change}
after=${AFTER:?set AFTER to the kt binary after the change}
work=$(mktemp -d)
matmul=(naive-kernels/matmul.cu --param block_size_x=16,32,64,128,256 --param block_size_y=1,2,4,8,16,32
        --restrict "32 <= block_size_x*block_size_y")
matrixadd=(naive-kernels/matrixAdd.cu --param block_size_x=16,32,64,128,256 --param block_size_y=1,2,4,8,16
           --restrict "64 <= block_size_x*block_size_y" --restrict "block_size_x*block_size_y <= 1024")
declare -A times
for ((r = 0; r < reps; r++)); do
  for which in before after; do
    bin=${!which}
    for bench in matmul matrixadd; do
      declare -n args=$bench
      t0=$(date +%s.%N)
      "$bin" tune "${args[@]}" --cache-dir "$work/cache-$which-$bench-$r" --json > "$work/$which-$bench-$r.json" 2> "$work/$which-$bench-$r.err" \
        || { echo "$which $bench run $r failed:"; tail -5 "$work/$which-$bench-$r.err"; }
      t1=$(date +%s.%N)
      times[$which-$bench]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN{print b-a}') "
      unset -n args
    done
  done
done
for bench in matmul matrixadd; do
  for which in before after; do
    best=$(python3 -c "import json,sys; d=json.load(open(sys.argv[1])); b=d.get('best') or {}; print(b.get('config'), 'objective', b.get('objective'), 'ms')" "$work/$which-$bench-0.json" 2>/dev/null)
    python3 - "$bench" "$which" "${times[$which-$bench]}" "$best" <<'PY'
import statistics, sys
bench, which, ts, best = sys.argv[1], sys.argv[2], [float(x) for x in sys.argv[3].split()], sys.argv[4]
print(f"{bench:10s} {which:6s} wall s: median {statistics.median(ts):.2f} (min {min(ts):.2f}, max {max(ts):.2f}, n={len(ts)}); best {best}")
PY
  done
done
