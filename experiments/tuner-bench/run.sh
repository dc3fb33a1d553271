#!/usr/bin/env bash
# kt-tuner benchmarks against Kernel Tuner, in one call on the GPU machine (needs .device/bin/kt from
# ../shared/scripts/device-pack and the Kernel Tuner wheels in .whl/, both carried). Prints a final table;
# full JSON results go to $OUT (or /tmp/tuner-bench).
set -uo pipefail
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
python3 experiments/tuner-bench/bench.py --kt "${KT:-.device/bin/kt}" --out "${OUT:-/tmp/tuner-bench}"
