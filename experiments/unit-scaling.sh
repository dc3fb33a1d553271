#!/usr/bin/env bash
# Unit extraction on files of N device functions (issue 32: it must grow linearly with the file).
#   experiments/unit-scaling.sh [KT] [N...]     (default: target/release/kt; 16000 32000 64000)
set -euo pipefail
kt=${1:-target/release/kt}; shift || true
sizes=("${@:-16000 32000 64000}")
dir=$(mktemp -d)
for n in ${sizes[@]}; do
  python3 - "$dir/many$n.cu" "$n" <<'PY'
import sys
path, n = sys.argv[1], int(sys.argv[2])
with open(path, "w") as f:
    for i in range(n):
        f.write(f"__device__ float f{i}(float x) {{ return x * {i}.0f + 1.0f; }}\n")
    f.write("__global__ void k(float *a) { a[threadIdx.x] = f0(a[threadIdx.x]); }\n")
PY
  /usr/bin/time -f "$n device functions ($(stat -c %s "$dir/many$n.cu") bytes): kt inspect --unit %e s, peak %M KB" \
    "$kt" inspect "$dir/many$n.cu" --unit > /dev/null
done
rm -rf "$dir"
