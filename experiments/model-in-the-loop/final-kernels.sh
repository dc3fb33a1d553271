#!/usr/bin/env bash
# The final kernels of the autonomous runs, measured apart from their runs (a GPU machine, from the repository
# root, after `loop.py unpack state-….tar.gz`):
#   - matmul's final kernel timed by `kt tune` at 4096³ and at its run's three test sizes, beside cuBLAS SGEMM
#     (cupy, TF32 off) at the same sizes;
#   - Nsight Compute profiles of the final matmul and assign_clusters kernels, taken over `kt tune` (the first
#     profiled launch with the best configuration's block is printed).
# Usage: experiments/model-in-the-loop/final-kernels.sh [KT]   (KT defaults to target/release/kt)
set -uo pipefail
KT=${1:-target/release/kt}
WORK=$(mktemp -d)
SECTIONS="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats
  --section MemoryWorkloadAnalysis --section ComputeWorkloadAnalysis --section SchedulerStats"

# best.cu of a cell's run, beside a copy of the kernel's sidecar (kt's lookup: same stem, .toml)
final_kernel() {  # cell kernel-file-stem
  local run; run=$(ls -d .mitl/cells/"$1"/runs/*/ | tail -1)
  cp "$run/best.cu" "$WORK/$2_best.cu"; cp "naive-kernels/$2.toml" "$WORK/$2_best.toml"
  echo "$WORK/$2_best.cu"
}
# --param NAME=VALUE for each of a cell's best parameters
best_params() {
  python3 -c 'import json,glob,sys; p=json.load(open(sorted(glob.glob(".mitl/cells/"+sys.argv[1]+"/runs/*/best_params.json"))[-1]))
print(" ".join(f"--param {k}={v}" for k, v in p.items()))' "$1"
}
first_with_block() { awk -v blk="$1" '/^  [^ ].*Context [0-9]+, Stream/ { inrec = index($0, blk) > 0; if (inrec) n++ } inrec && n == 1 { print }'; }

MM=$(final_kernel matmul--autonomous matmul)
MMP="$(best_params matmul--autonomous) --grid-div-x block_size_x,tile_size_x --grid-div-y block_size_y,tile_size_y"
for s in "4096 4096 4096" "1811 1783 1973" "1553 1987 1607" "1657 2003 1567"; do
  set -- $s
  echo "== kt tune, matmul's final kernel, A_width=$1 A_height=$2 B_width=$3"
  $KT tune "$MM" $MMP --size A_width=$1 --size A_height=$2 --size B_width=$3 --min-reps 20 --no-peak 2>&1 | grep "^best"
done
echo "== cuBLAS SGEMM (cupy, TF32 off)"
CUPY_TF32=0 python3 - <<'PY'
import cupy as cp, numpy as np
for (K, M, N) in [(4096, 4096, 4096), (1811, 1783, 1973), (1553, 1987, 1607), (1657, 2003, 1567)]:
    a = cp.asarray(np.random.default_rng(1).standard_normal((M, K), dtype=np.float32))
    b = cp.asarray(np.random.default_rng(2).standard_normal((K, N), dtype=np.float32))
    for _ in range(5):
        c = a @ b
    times = []
    for _ in range(30):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record(); c = a @ b; e.record(); e.synchronize()
        times.append(cp.cuda.get_elapsed_time(s, e))
    t = float(np.median(times))
    print(f"cuBLAS SGEMM M={M} N={N} K={K}: median {t:.4f} ms, {2 * M * N * K / t / 1e9:.1f} TFLOP/s")
PY
echo "== ncu, matmul's final kernel at 4096³"
timeout 250 ncu --kernel-name regex:matrixMultiply --launch-count 14 $SECTIONS \
  $KT tune "$MM" $MMP --no-verify --no-peak 2>&1 | first_with_block "x($(python3 -c 'import json,glob; p=json.load(open(sorted(glob.glob(".mitl/cells/matmul--autonomous/runs/*/best_params.json"))[-1])); print(p["block_size_x"], p["block_size_y"], 1, sep=", ")'))"
echo "== ncu, assign_clusters's final kernel at its bench size"
AC=$(final_kernel assign_clusters--autonomous assign_clusters)
timeout 200 ncu --kernel-name regex:assign_clusters --launch-count 14 $SECTIONS \
  $KT tune "$AC" $(best_params assign_clusters--autonomous) --no-verify --no-peak 2>&1 \
  | first_with_block "x($(python3 -c 'import json,glob; p=json.load(open(sorted(glob.glob(".mitl/cells/assign_clusters--autonomous/runs/*/best_params.json"))[-1])); print(p["block_size_x"], 1, 1, sep=", ")'))"
rm -rf "$WORK"
