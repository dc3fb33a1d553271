#!/usr/bin/env bash
# A stand-in for `kt transform` / `kt resume` in kt-experiments' tests. It leaves a run directory shaped like
# a real run's (run.json, llm.jsonl, result.json per RUN_FORMAT.md) and is steered by environment variables:
#   FAKE_KT_LOG        file that gets one line per invocation: "transform <cell dir>" or "resume <cell dir>"
#   FAKE_KT_SLEEP      seconds of "work" before the result is written (default 0)
#   FAKE_KT_SLOW_ON    work 30 s instead when the run directory contains this text
#   FAKE_KT_LOCKS      directory for per-GPU locks: a second cell on the same CUDA_VISIBLE_DEVICES logs "overlap"
#   FAKE_KT_DIE_ON     crash (exit 3, no result) when the run directory contains this text
#   FAKE_KT_FAIL_ON    end with status "failed" when the run directory contains this text
#   FAKE_KT_NO_GPU_ON  stop as kt does without a GPU (interrupted result, "a CUDA GPU is needed", exit 2) when
#                      the run directory contains this text
#   FAKE_KT_LLM_DOWN_ON end with status "llm_unavailable" and exit 75 (an LLM outage) when the run directory
#                      contains this text
#   FAKE_KT_IGNORE_INT 1: ignore SIGINT (the coordinator must kill it)
#   FAKE_KT_TOKENS     tokens per LLM call (two calls are recorded before the work), FAKE_KT_COST dollars per call
# SIGINT makes it write an "interrupted" result.json and exit 130, as a real run does at a checkpoint.
set -euo pipefail

log=${FAKE_KT_LOG:?FAKE_KT_LOG must name the invocation log}
cmd=${1:?usage: fake-kt.sh transform FILE ... | resume RUN_DIR}
shift
case "$cmd" in
  transform)
    file=$1
    shift
    strategy=""
    out=""
    while [[ $# -gt 0 ]]; do
      case "$1" in
        --strategy) strategy=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --*) shift 2 ;;
        *) echo "fake kt: unexpected argument $1" >&2; exit 64 ;;
      esac
    done
    kernel=$(basename "$file" .cu)
    run="$out/$(date -u +%Y%m%d-%H%M%S)-$kernel-$strategy-$(printf '%04x' $((RANDOM % 65536)))"
    mkdir -p "$run"
    # fake-args first: a directory with run.json must be resumable.
    printf 'kernel=%q\nstrategy=%q\n' "$kernel" "$strategy" > "$run/fake-args"
    printf '{"kernel":"%s","strategy":"%s","status":"running"}\n' "$kernel" "$strategy" > "$run/run.json"
    echo "transform $out" >> "$log"
    ;;
  resume)
    run=$1
    if [[ "${2:-}" != --llm || -z "${3:-}" ]]; then
      echo "fake kt: resume must name the cell's model (--llm), or the run would switch LLMs" >&2
      exit 64
    fi
    # shellcheck source=/dev/null
    source "$run/fake-args"
    echo "resume $(dirname "$run")" >> "$log"
    ;;
  *)
    echo "fake kt: unknown command $cmd" >&2
    exit 64
    ;;
esac

lock=""
if [[ -n "${FAKE_KT_LOCKS:-}" && -n "${CUDA_VISIBLE_DEVICES:-}" ]]; then
  lock="$FAKE_KT_LOCKS/gpu-$CUDA_VISIBLE_DEVICES"
  if ! mkdir "$lock" 2>/dev/null; then
    echo "overlap on gpu $CUDA_VISIBLE_DEVICES" >> "$log"
    lock=""
  fi
fi
release() {
  if [[ -n "$lock" ]]; then rmdir "$lock" 2>/dev/null || true; fi
}
sleeper=""
interrupted() {
  if [[ -n "$sleeper" ]]; then kill "$sleeper" 2>/dev/null || true; fi
  printf '{"schema_version":1,"kernel":"%s","strategy":"%s","status":"interrupted","error":"interrupted"}\n' \
    "$kernel" "$strategy" > "$run/result.json"
  release
  exit 130
}
if [[ "${FAKE_KT_IGNORE_INT:-0}" == 1 ]]; then
  trap '' INT
else
  trap interrupted INT
fi

tokens=${FAKE_KT_TOKENS:-100}
for _ in 1 2; do
  printf '{"node":"fake","usage":{"input_tokens":%d,"output_tokens":0},"cost_usd":%s}\n' \
    "$tokens" "${FAKE_KT_COST:-0.01}" >> "$run/llm.jsonl"
done

work=${FAKE_KT_SLEEP:-0}
if [[ -n "${FAKE_KT_SLOW_ON:-}" && "$run" == *"$FAKE_KT_SLOW_ON"* ]]; then
  work=30
fi
# Ready: from here on SIGINT leaves an interrupted, resumable run.
if [[ -n "${KT_CONFIG:-}" ]]; then
  echo "config $(dirname "$run") $KT_CONFIG" >> "$log"
fi
echo "working $(dirname "$run") gpu=${CUDA_VISIBLE_DEVICES:-}" >> "$log"
sleep "$work" &
sleeper=$!
wait "$sleeper"
sleeper=""

if [[ -n "${FAKE_KT_NO_GPU_ON:-}" && "$run" == *"$FAKE_KT_NO_GPU_ON"* ]]; then
  release
  printf '{"schema_version":2,"kernel":"%s","strategy":"%s","status":"interrupted","correct":false,"outcome":null,"error":"a CUDA GPU is needed from here on: no CUDA driver"}\n' \
    "$kernel" "$strategy" > "$run/result.json"
  echo "a CUDA GPU is needed from here on: no CUDA driver" >&2
  exit 2
fi
if [[ -n "${FAKE_KT_LLM_DOWN_ON:-}" && "$run" == *"$FAKE_KT_LLM_DOWN_ON"* ]]; then
  release
  printf '{"schema_version":2,"kernel":"%s","strategy":"%s","status":"llm_unavailable","correct":false,"outcome":null,"error":"HTTP 503 after 5 attempts"}\n' \
    "$kernel" "$strategy" > "$run/result.json"
  exit 75
fi
if [[ -n "${FAKE_KT_DIE_ON:-}" && "$run" == *"$FAKE_KT_DIE_ON"* ]]; then
  release
  echo "fake kt: crashing as told" >&2
  exit 3
fi

status=finished
error=null
case "$strategy" in
  one-prompt) speedup=1.1 ;;
  explicit) speedup=1.5 ;;
  autonomous) speedup=2.0 ;;
  *) speedup=1.0 ;;
esac
if [[ -n "${FAKE_KT_FAIL_ON:-}" && "$run" == *"$FAKE_KT_FAIL_ON"* ]]; then
  status=failed
  error='"fake failure"'
  speedup=1.0
fi
# From here on the run is done: an interrupt must not turn a final result into an interrupted one.
trap '' INT
best=$(awk -v s="$speedup" 'BEGIN { printf "%.4f", 10 / s }')
gain=$(awk -v s="$speedup" 'BEGIN { printf "%.6f", 1 - 1 / s }')
printf '{"schema_version":2,"run_id":"%s","kernel":"%s","strategy":"%s","status":"%s","correct":true,"outcome":"improved","naive_time_ms":10.0,"best_time_ms":%s,"speedup":%s,"gain":%s,"percent_of_peak":50.0,"tokens_in":%d,"tokens_out":0,"cost_usd":0.02,"wall_time_s":{"total":1.5},"error":%s}\n' \
  "$(basename "$run")" "$kernel" "$strategy" "$status" "$best" "$speedup" "$gain" $((2 * tokens)) "$error" > "$run/result.json.tmp"
mv "$run/result.json.tmp" "$run/result.json"
release
