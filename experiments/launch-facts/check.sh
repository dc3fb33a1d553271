#!/usr/bin/env bash
# GPU check of launch facts read from host code (issue 44): each kernel of tests/corpus/real-world-classes/
# host_launch.cu tuned and verified at the program's own launch (block-per-row softmax with its shared memory,
# eight values per thread over ceil_div(N, block_size * 8) blocks, a 1-D block of 32 x 32 threads that falls back
# to its own launch), `kt verify` of a templated kernel with template values from the program's launches, and
# the launch_facts test executable with its GPU test. Prints one table row per check and `N passed, N failed`.
#   experiments/launch-facts/check.sh            (KT=path/to/kt, default .device/bin/kt; TESTS=dir, default .device/tests)
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
KT=${KT:-.device/bin/kt}
TESTS=${TESTS:-.device/tests}
out=$(mktemp -d)
passed=0; failed=0
rows=()
check() {
  local name=$1 want=$2; shift 2
  local log="$out/$name.log"
  "$@" >"$log" 2>&1; local rc=$?
  local got=ok; [[ $rc -eq 0 ]] || got="exit $rc"
  if [[ $rc -eq 0 ]] && { [[ -z $want ]] || grep -qF -- "$want" "$log"; }; then
    passed=$((passed + 1)); rows+=("$(printf '%-28s %-8s %s' "$name" PASS "$got")")
  else
    failed=$((failed + 1)); rows+=("$(printf '%-28s %-8s %s (log: %s)' "$name" FAIL "$got" "$log")")
    tail -n 20 "$log"
  fi
}
F=tests/corpus/real-world-classes/host_launch.cu
check softmax_rows "one block per" "$KT" tune "$F" --kernel softmax_rows --test-size
check scale8 "grid divisors [block_size_x, 8]" "$KT" tune "$F" --kernel scale8 --test-size
check sgemm_coalesced "tuning the default launch alone" "$KT" tune "$F" --kernel sgemm_coalesced --test-size
check scale8-verify "size_rules" "$KT" verify "$F" "$F" --kernel scale8 --quick
H=tests/corpus/real-world-classes/host_instances.cu
check host_instances-verify "the value of the default launch's block" "$KT" verify "$H" "$H" --quick
if compgen -G "$TESTS/launch_facts-*" >/dev/null; then
  for t in "$TESTS"/launch_facts-*; do
    [[ -x $t ]] && check "test-$(basename "$t")" "" env KT_GPU=1 "$t" --include-ignored
  done
else
  rows+=("$(printf '%-28s %-8s %s' launch_facts-tests SKIP "no $TESTS/launch_facts-*")")
fi
printf '%-28s %-8s %s\n' check result detail
printf '%s\n' "${rows[@]}"
echo "$passed passed, $failed failed"
exit $((failed > 0))
