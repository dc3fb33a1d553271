#!/usr/bin/env bash
# Captures a real Nsight Compute report for kt-profile's tests, in one GPU call:
#   experiments/profile/capture-ncu.sh [OUT_FILE]      (default: $OUT/captured-matmul-naive-<gpu>.csv)
# Compiles a tiny naive matmul (matmul_bench.cu) with nvcc, profiles one launch of its kernel with exactly the ncu command line
# kt-profile builds (ProfileCommand::ncu_args: same flags, same metrics; a test in crates/kt-profile keeps the
# two equal) and writes ncu's raw CSV log. Copy the file to crates/kt-profile/tests/fixtures/ to have CI
# parse it (tests/ncu_report.rs checks every captured-*.csv there).
set -euo pipefail

find_tool() {
  local name=$1
  if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return; fi
  for dir in "${CUDA_HOME:+$CUDA_HOME/bin}" /usr/local/cuda/bin; do
    if [ -n "$dir" ] && [ -x "$dir/$name" ]; then echo "$dir/$name"; return; fi
  done
  echo "capture-ncu: $name not found on PATH, in \$CUDA_HOME/bin or /usr/local/cuda/bin" >&2
  exit 2
}
NCU=$(find_tool ncu)
NVCC=$(find_tool nvcc)

# The fixed metric set: kt_profile::METRICS, joined by commas.
METRICS=launch__registers_per_thread,launch__block_size,launch__grid_size,launch__shared_mem_per_block_static,launch__shared_mem_per_block_dynamic,launch__waves_per_multiprocessor,gpu__time_duration.sum,gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__warps_active.avg.pct_of_peak_sustained_active,sm__maximum_warps_per_active_cycle_pct,launch__occupancy_limit_registers,launch__occupancy_limit_shared_mem,launch__occupancy_limit_warps,launch__occupancy_limit_blocks,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,l1tex__t_sector_hit_rate.pct,l1tex__t_bytes_pipe_lsu_mem_local_op_ld.sum,l1tex__t_bytes_pipe_lsu_mem_local_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_membar_per_issue_active.ratio,smsp__average_warps_issue_stalled_mio_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio,smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio,smsp__average_warps_issue_stalled_drain_per_issue_active.ratio,smsp__average_warps_issue_stalled_imc_miss_per_issue_active.ratio,smsp__average_warps_issue_stalled_branch_resolving_per_issue_active.ratio,smsp__average_warps_issue_stalled_no_instruction_per_issue_active.ratio,smsp__average_warps_issue_stalled_sleeping_per_issue_active.ratio,smsp__average_warps_issue_stalled_misc_per_issue_active.ratio,lts__t_bytes.sum,l1tex__t_bytes.sum,smsp__sass_thread_inst_executed_op_fadd_pred_on.sum,smsp__sass_thread_inst_executed_op_fmul_pred_on.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$NVCC" -O3 -arch=native -o "$work/matmul_bench" "$(dirname "$0")/matmul_bench.cu"

gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 | tr -c 'A-Za-z0-9\n' '-' | tr 'A-Z' 'a-z' | sed 's/--*/-/g; s/-$//')
out=${1:-${OUT:-.}/captured-matmul-naive-${gpu:-gpu}.csv}
mkdir -p "$(dirname "$out")"

echo "ncu: $NCU ($("$NCU" --version | tail -1))"
echo "nvcc: $NVCC ($("$NVCC" --version | tail -1))"
echo "gpu: ${gpu:-unknown}"
t0=$SECONDS
# exactly ProfileCommand::ncu_args for kernel "matmul", launch_skip 0
"$NCU" --target-processes all --kernel-name 'regex:^matmul$' --launch-skip 0 --launch-count 1 \
  --csv --page raw --print-units base --metrics "$METRICS" --clock-control none --log-file "$out" \
  "$work/matmul_bench" 1024 || echo "capture-ncu: ncu exited with status $?" >&2
echo "profiled in $((SECONDS - t0)) s; report: $out"
if ! grep -q '^"0",' "$out" 2>/dev/null; then
  echo "capture-ncu: no launch row in $out; its end:" >&2; tail -20 "$out" >&2 || true; exit 1
fi
head -c 400 "$out"; echo
