#!/usr/bin/env bash
# kt studio on a run of many checkpoints (default 10,000): how long until the run page (summary, graph with the
# path, newest steps: the first paint) and then its sections (LLM calls, tuning, kernels) and its checkpoint
# timeline are interactive in headless Chromium, measured apart
#   - on a first load: a fresh `kt studio` per sample, so nothing of the run is kept (the OS file cache is warm),
#     with the server's time for each part of the first build (its debug log, `first_build:` lines);
#   - on loads served from what one studio keeps for the run while its files are unchanged;
# then the server's time for each page built and kept, for the diff of the first and last checkpoints and for
# the state at the last, and the studio's peak memory (VmHWM). CPU only; needs chromium. Debug build (what
# `cargo test` builds).
#   experiments/studio-bench/run.sh [steps]
#   KT_STUDIO_BENCH_SAMPLES=5 (loads of each kind); KT_STUDIO_BENCH_HOME=DIR keeps the recorded run for reuse.
# Targets (issue 30): page interactive < 1 s, studio memory < 200 MB. Figures go to experiments/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
export KT_STUDIO_BENCH_STEPS=${1:-10000}
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
cargo test --locked --test studio -- --ignored --nocapture --exact studio_bench_a_run_of_many_checkpoints 2>&1 \
  | grep -E '^(recorded|first_build|checkpoints|run_page|timeline|run_api|sections_api|history_api|diff_|state_at|studio_peak)|FAILED|panicked|^error'
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
