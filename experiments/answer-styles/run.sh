#!/usr/bin/env bash
# Answers in the styles real models write, given to the demo's first `apply` (issue 14), on a GPU:
#   KT=.device/bin/kt experiments/answer-styles/run.sh [OUT] [RUN]
# 1. runs the autonomous matmul demo from its replay cassette, or from the scripted answers it was recorded
#    from when the cassette misses (or uses RUN, a run directory, when given);
# 2. finds the checkpoint before the run's first `apply` (`kt debug history`);
# 3. for each experiments/answer-styles/*.toml: `kt debug node RUN apply --at N --llm scripted:FILE --json`
#    (a scratch copy of the run: its history stays as it was), each within STYLE_TIMEOUT seconds and all
#    within BUDGET seconds (default 480: one device command has 600);
# 4. writes the table to OUT/answer-styles.md and prints it, ending "N of M styles ended in a verified, tuned
#    kernel". Goes on past every failure. Needs python3 (the demo's Stage 2 needs it with numpy anyway).
# The demo run (with its large test inputs) goes to WORK (default /tmp/kt-answer-styles-run), not OUT, so OUT
# stays small enough to copy back; OUT gets the demo's log, result.json and report.md.
set -uo pipefail
absolute() { if [[ -z $1 || $1 = /* ]]; then echo "$1"; else echo "$PWD/$1"; fi; }
out=$(absolute "${1:-/tmp/kt-answer-styles}")
run=$(absolute "${2:-}")
[[ ${KT:-} == */* ]] && KT=$(absolute "$KT")
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/../.." || exit 2
KT=${KT:-.device/bin/kt}
work=${WORK:-/tmp/kt-answer-styles-run}
style_timeout=${STYLE_TIMEOUT:-90}
budget=${BUDGET:-480}
summarize="$here/summarize.py"

mkdir -p "$out"
rm -rf "$out/styles" "$out/answer-styles.md" "$out"/demo-*.log
mkdir -p "$out/styles"
t0=$SECONDS

# The checkpoint before the first `apply` of run $1 (branch 0), or nothing.
first_apply() {
  "$KT" debug history "$1" --json >"$out/history.json" 2>"$out/history.err" || return 0
  python3 -c '
import json, sys
h = json.load(open(sys.argv[1]))
first = next((c for c in h["checkpoints"]
              if c["branch"] == 0 and any(n.split("#")[0] == "apply" for n in c["next"])), None)
print(first["checkpoint"] if first else "")' "$out/history.json" 2>>"$out/history.err"
}

# Runs the demo with answers from $2 (an --llm value) under $work/$1; sets `run` and `at`.
demo() {
  local dir=$work/$1 t=$SECONDS
  rm -rf "$dir"; mkdir -p "$dir"
  echo "=== demo ($1): $KT transform naive-kernels/matmul.cu --strategy autonomous --replan 3 --llm $2"
  "$KT" transform naive-kernels/matmul.cu --strategy autonomous --replan 3 --llm "$2" --out "$dir" \
    >"$out/demo-$1.log" 2>&1
  echo "--- demo ($1) exited with $? ($((SECONDS - t)) s); log: $out/demo-$1.log"
  tail -n 8 "$out/demo-$1.log"
  run='' at=''
  for d in "$dir"/*/; do [[ -f $d/run.json ]] && run=${d%/} && break; done
  [[ -n $run ]] && at=$(first_apply "$run")
  [[ -n $at ]] && cp "$run/result.json" "$run/report.md" "$out/" 2>/dev/null
  source_of_run="the demo run with answers from $2"
  return 0
}

at=
source_of_run="a run given to run.sh"
if [[ -n $run ]]; then
  at=$(first_apply "$run")
else
  # The replay cassette is keyed by each request's hash: after a prompt change that was not re-recorded it
  # misses, so the scripted answers the cassette was recorded from (keyed by node) are the fallback.
  demo replay replay:experiments/cassettes/matmul-autonomous.jsonl
  [[ -z $at ]] && demo scripted scripted:experiments/cassettes/matmul-autonomous.toml
fi
echo "=== run: ${run:-none}"
if [[ -z $at ]]; then
  echo "no checkpoint before an apply in ${run:-any demo run} (see $out/history.json, $out/history.err, $out/demo-*.log)"
  exit 1
fi
step=$("$KT" debug state "$run" --at "$at" --field current.description 2>/dev/null | head -n 1)
naive=$("$KT" debug state "$run" --at "$at" --field reference --json 2>/dev/null |
  python3 -c 'import json, sys; r = json.load(sys.stdin); print("%.3f ms on %s" % (r["time_ms"], r["device"]))' 2>/dev/null)
echo "=== first apply: checkpoint #$at, step: ${step:-?}; naive: ${naive:-?}"

# Control: the recorded answer at the same checkpoint, replayed (no GPU work: tuning results are reused).
"$KT" debug node "$run" apply --at "$at" --llm replay --json >"$out/recorded.json" 2>"$out/recorded.err"
recorded=$(python3 "$summarize" --recorded "$out/recorded.json")

styles_json="["
for file in "$here"/*.toml; do
  name=$(basename "$file" .toml)
  styles_json+="{\"name\": \"$name\", \"file\": \"$file\"},"
  left=$((budget - (SECONDS - t0)))
  if ((left < 10)); then
    echo "--- $name: not run (the budget of $budget s is spent)"
    continue
  fi
  limit=$((left < style_timeout ? left : style_timeout))
  s0=$SECONDS
  KT_LOG=warn,kt_pipeline=info timeout --kill-after=10 "$limit" "$KT" debug node "$run" apply --at "$at" \
    --llm "scripted:$file" --json >"$out/styles/$name.json" 2>"$out/styles/$name.err"
  echo $? >"$out/styles/$name.rc"
  echo "--- $name: exit $(cat "$out/styles/$name.rc") ($((SECONDS - s0)) s)"
done
styles_json="${styles_json%,}]"

device=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)
python3 - "$out/context.json" "$run" "$at" "$step" "$naive" "$recorded" "$device" "$("$KT" --version 2>/dev/null)" \
  "$style_timeout" "$styles_json" "$source_of_run" <<'EOF'
import json, sys
path, run, at, step, naive, recorded, device, version, timeout, styles, source = sys.argv[1:]
json.dump({"run": run, "source": source, "at": int(at), "step": step or "?", "naive": naive or "?", "recorded": recorded,
           "device": device or "?", "kt_version": version or "?", "style_timeout_s": int(timeout),
           "styles": json.loads(styles)}, open(path, "w"), indent=2)
EOF
python3 "$summarize" "$out" >"$out/answer-styles.md"
echo
cat "$out/answer-styles.md"
echo "($((SECONDS - t0)) s in all; per style: $out/styles/)"
