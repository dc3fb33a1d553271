#!/usr/bin/env bash
# Issue 22 in one call on a machine with two GPUs: the two-gpu design with `--gpus 0`, then with `--gpus 0,1`;
# prints both wall times, each cell's GPU (CUDA_VISIBLE_DEVICES, device name, PCI bus id) and its final timing
# (median of 10 separate launches of naive and best, one launch each), alone and beside the other GPU's cell.
#   KT=.device/bin/kt experiments/two-gpu.sh [OUT]
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
KT=${KT:-kt}
out=${1:-/tmp/kt-two-gpu}
rm -rf "$out"; mkdir -p "$out"
nvidia-smi --query-gpu=index,name,pci.bus_id --format=csv,noheader
for gpus in 0 0,1; do
  t0=$(date +%s.%N)
  "$KT" experiment run experiments/two-gpu.toml --gpus "$gpus" --quiet --out "$out/gpus-$gpus" | tail -2
  t1=$(date +%s.%N)
  echo "--gpus $gpus: wall $(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.1f", b-a}') s"
done
python3 - "$out" <<'PY'
import json, statistics, sys
out = sys.argv[1]
rows = {}
for gpus in ["0", "0,1"]:
    for line in open(f"{out}/gpus-{gpus}/cells.jsonl"):
        c = json.loads(line)
        r = c.get("result") or {}
        g = r.get("gpu") or {}
        f = r.get("final_timing") or {}
        med = lambda v: statistics.median(v) if v else float("nan")
        spread = lambda v: 100 * (max(v) - min(v)) / statistics.median(v) if v else float("nan")
        rows.setdefault(c["cell_id"], {})[gpus] = (c.get("status"), c.get("gpu"), g.get("name"), g.get("pci_bus_id"),
                                                  med(f.get("naive_ms")), med(f.get("best_ms")), c.get("elapsed_s"),
                                                  spread(f.get("naive_ms")), spread(f.get("best_ms")))
print(f"{'cell':48s} {'run':5s} {'status':9s} {'gpu':3s} {'pci bus id':18s} {'naive ms':>9s} {'best ms':>9s} {'cell s':>7s} spread of the 10 launches (max-min)/median")
for cell, by in rows.items():
    for gpus, (st, vis, name, pci, n, b, e, sn, sb) in by.items():
        print(f"{cell:48s} {gpus:5s} {st:9s} {str(vis):3s} {str(pci):18s} {n:9.4f} {b:9.4f} {e or 0:7.1f} naive {sn:.2f} %, best {sb:.2f} %")
    if len(by) == 2:
        (a, b2) = by["0"], by["0,1"]
        print(f"{'':48s} change beside the other GPU: naive {100*(b2[4]/a[4]-1):+.2f} %, best {100*(b2[5]/a[5]-1):+.2f} %")
PY
