#!/usr/bin/env bash
# How long kt's start takes to find its Python (`PythonRuntime::find_or_provision`, what `kt transform`,
# `kt testgen` and `kt experiment` call before the run starts): the real probe (python3 imports numpy) every
# time, against kt's probe cache (issue 34 item 6). Each sample is a fresh process of the example
# `find_python`, which prints the milliseconds the lookup took; the process's whole wall time is shown too.
#   experiments/python-probe/bench.sh [samples]      (default 10)
#   KT_PYTHON picks the interpreter as for kt (e.g. KT_PYTHON=/opt/kt-venv/bin/python3). Debug build.
# Figures go to experiments/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/../.."
samples=${1:-10}
cargo build --locked -q -p kt-sandbox --example find_python
bin=target/debug/examples/find_python
cache=$(mktemp -d /tmp/kt-python-probe-bench-XXXXXX)
trap 'rm -rf "$cache"' EXIT

# one line per sample: <lookup ms> <process ms>
sample() {
    local t0 t1 out
    t0=$(date +%s%N)
    out=$("$bin")
    t1=$(date +%s%N)
    echo "${out%% *} $(( (t1 - t0) / 1000000 ))"
}

# median of column $1 of stdin
median() { sort -n -k"$1","$1" | awk -v c="$1" '{v[NR]=$c} END {print v[int((NR+1)/2)]}'; }

report() {
    local name=$1 lines=$2
    printf '%-22s lookup median %8s ms   process median %5s ms   (%s samples)\n' "$name" \
        "$(median 1 <<<"$lines")" "$(median 2 <<<"$lines")" "$(wc -l <<<"$lines")"
}

echo "python: $(KT_PYTHON_PROBE_CACHE=off "$bin" | cut -d' ' -f2-)   KT_PYTHON=${KT_PYTHON:-unset}"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
cold=$(for _ in $(seq "$samples"); do KT_PYTHON_PROBE_CACHE=off sample; done)
first=$(KT_PYTHON_PROBE_CACHE="$cache" sample)
warm=$(for _ in $(seq "$samples"); do KT_PYTHON_PROBE_CACHE="$cache" sample; done)
report "no cache (probe)" "$cold"
report "cache miss (1st run)" "$first"
report "cache hit" "$warm"
echo "cache entry: $(ls "$cache")"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
