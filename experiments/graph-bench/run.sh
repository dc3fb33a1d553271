#!/usr/bin/env bash
# kt-graph vs LangGraph on a 1000-step loop checkpointed to SQLite on disk, both on this machine.
# Usage: experiments/graph-bench/run.sh [steps]   (from anywhere; needs python3 with venv and cargo)
# The last line printed is `ratio: N` = LangGraph ms/step / kt-graph ms/step.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
steps="${1:-1000}"

venv="$here/.venv"
if [ ! -x "$venv/bin/python" ]; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install --quiet --upgrade pip
    "$venv/bin/pip" install --quiet langgraph langgraph-checkpoint-sqlite
fi
echo "== versions"
"$venv/bin/python" -c 'import importlib.metadata as m; print("langgraph", m.version("langgraph"), "| langgraph-checkpoint-sqlite", m.version("langgraph-checkpoint-sqlite"))'
rustc --version

echo "== LangGraph ($steps steps)"
lg="$("$venv/bin/python" "$here/langgraph_loop.py" "$steps")"
echo "$lg"

echo "== kt-graph ($steps steps)"
(cd "$root" && cargo build --quiet --release -p kt-graph --example loop_bench)
kt="$("$root/target/release/examples/loop_bench" "$steps")"
echo "$kt"

val() { echo "$1" | awk -v k="$2:" '$1 == k { print $2 }'; }
lg_ms="$(val "$lg" ms_per_step)"; kt_ms="$(val "$kt" ms_per_step)"
lg_b="$(val "$lg" bytes_on_disk)"; kt_b="$(val "$kt" bytes_on_disk)"
python3 - "$lg_ms" "$kt_ms" "$lg_b" "$kt_b" <<'PY'
import sys
lg_ms, kt_ms, lg_b, kt_b = map(float, sys.argv[1:])
print(f"bytes ratio (LangGraph / kt-graph): {lg_b / kt_b:.1f}")
print(f"ratio: {lg_ms / kt_ms:.1f}")
PY
