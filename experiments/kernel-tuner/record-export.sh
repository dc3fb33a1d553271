#!/usr/bin/env bash
# Records a Kernel Tuner export from a real GPU run, for kt-tuner's interop test and issue 24's figures. On the
# GPU machine, in one call (needs .device/bin/kt, python3 with numpy and cupy, and the Kernel Tuner wheels in
# .whl/ when it is not installed there, as experiments/tuner-bench/run.sh does):
#   1. kt tunes naive matmul 4096³ over Kernel Tuner's 27 block sizes and writes its export;
#   2. the export, copied elsewhere, runs unmodified with Kernel Tuner in simulation mode (kt's cache) and in a
#      real run (lang="cupy", Kernel Tuner measuring every configuration itself);
#   3. the three bests are printed side by side;
#   4. kt tunes again from Kernel Tuner's own cache of step 2 (`--kt-cache`): every configuration is reused.
# Everything goes to $OUT (default /tmp/kt-record-export); $OUT/export/matrixMultiply is the directory to copy
# to crates/kt-tuner/tests/fixtures/kernel_tuner/recorded/<name>/.
set -euo pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
out=${OUT:-/tmp/kt-record-export}
kt=${KT:-.device/bin/kt}
mkdir -p "$out"
out=$(cd "$out" && pwd)
kt=$(cd "$(dirname "$kt")" && pwd)/$(basename "$kt")
rm -f "$out/kernel-tuner-real-cache.json"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
fi
python3 -c 'import numpy, cupy, kernel_tuner, importlib.metadata as m; print("kernel_tuner", m.version("kernel_tuner"), "cupy", cupy.__version__)' \
  || { echo "record-export: python3 needs numpy, cupy and kernel_tuner (carry the wheels in .whl/)" >&2; exit 1; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader

export_dir="$out/export/matrixMultiply"
rm -rf "$export_dir"
echo "== kt tune (naive matmul 4096^3, 27 configurations)"
start=$(date +%s%N)
"$kt" tune naive-kernels/matmul.cu \
  --param block_size_x=8,16,32,64,128,256 --param block_size_y=1,2,4,8,16,32 \
  --restrict "32 <= block_size_x*block_size_y and block_size_x*block_size_y <= 1024" \
  --export-kt-script "$export_dir/tune_matrixMultiply.py" --json >"$out/kt-tune.json"
echo "kt wall: $(( ($(date +%s%N) - start) / 1000000 )) ms"
python3 - "$out/kt-tune.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
b = r["best"]
print("kt best:", json.dumps(dict(b["config"])), "%.4f ms: %s" % (b["objective"], r["time_basis"]["objective"]))
PY

# Kernel Tuner runs the export from a copy, in another working directory: nothing may depend on where kt wrote it.
copy=$(mktemp -d)/matrixMultiply
cp -r "$export_dir" "$copy"
cd "$(mktemp -d)"
echo "== Kernel Tuner, simulation mode (kt's cache)"
python3 "$copy/tune_matrixMultiply.py" --simulate | tee "$out/kernel-tuner-simulate.txt" | tail -n 3
echo "== Kernel Tuner, real run (lang=cupy)"
start=$(date +%s%N)
python3 "$copy/tune_matrixMultiply.py" --cache "$out/kernel-tuner-real-cache.json" >"$out/kernel-tuner-real.txt" 2>&1 || { tail -n 30 "$out/kernel-tuner-real.txt"; exit 1; }
tail -n 3 "$out/kernel-tuner-real.txt"
echo "Kernel Tuner real-run wall: $(( ($(date +%s%N) - start) / 1000000 )) ms"
echo "== bests"
grep -h "best:" "$out/kernel-tuner-simulate.txt" | sed 's/^/simulation  /'
grep -h "best:" "$out/kernel-tuner-real.txt" | sed 's/^/real run    /'
cd - >/dev/null
echo "== kt tune --kt-cache (Kernel Tuner's cache of the real run)"
"$kt" tune naive-kernels/matmul.cu \
  --param block_size_x=8,16,32,64,128,256 --param block_size_y=1,2,4,8,16,32 \
  --restrict "32 <= block_size_x*block_size_y and block_size_x*block_size_y <= 1024" \
  --kt-cache "$out/kernel-tuner-real-cache.json" | tee "$out/kt-from-kernel-tuner.txt"
