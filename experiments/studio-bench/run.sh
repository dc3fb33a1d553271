#!/usr/bin/env bash
# kt studio on a run of many checkpoints (default 10,000): how long until the run page and its checkpoint
# timeline are interactive in headless Chromium (the first load builds what the studio keeps for the run as it
# is; the next two are served from that), the server's time for each page built and kept, for the diff of the
# first and last checkpoints and for the state at the last, and the studio's peak memory (VmHWM). CPU only;
# needs chromium.
#   experiments/studio-bench/run.sh [steps]
# Targets (issue 30): page interactive < 1 s, studio memory < 200 MB. Figures go to experiments/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
export KT_STUDIO_BENCH_STEPS=${1:-10000}
cargo test --locked --test studio -- --ignored --nocapture --exact studio_bench_a_run_of_many_checkpoints 2>&1 \
  | grep -E '^(recorded|checkpoints|run_page|timeline|run_api|history_api|diff_|state_at|studio_peak)|FAILED|panicked|^error'
