#!/usr/bin/env bash
# One GPU round of the model-in-the-loop driver, on the GPU machine (device tool: carry .device and .mitl):
#   bash experiments/model-in-the-loop/gpu-round.sh
# Moves every cell as far as it goes with the answers at hand, then packs the state (no test arrays) into
# $OUT/mitl.tar.gz and the step's log into $OUT/step.log.
set -uo pipefail
cd "$(dirname "$0")/../.."
out=${OUT:-/tmp/mitl-out}; mkdir -p "$out"
export PYTHONUNBUFFERED=1
nvidia-smi -L
# MITL_JOBS: cells moved at once (default 1). MITL_DEADLINE: no cell is started after that many seconds; MITL_TIMEOUT: the step is stopped after that many
# (a run stopped mid-tuning resumes from its last checkpoint), and the state is packed either way.
timeout --signal=INT "${MITL_TIMEOUT:-0}" python3 experiments/model-in-the-loop/loop.py --kt .device/bin/kt step \
  ${MITL_DEADLINE:+--deadline "$MITL_DEADLINE"} --jobs "${MITL_JOBS:-1}" 2>&1 | tee "$out/step.log"
python3 experiments/model-in-the-loop/loop.py status 2>&1 | tee -a "$out/step.log"
python3 experiments/model-in-the-loop/loop.py pack "$out/mitl.tar.gz"
