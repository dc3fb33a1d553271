#!/usr/bin/env bash
# Issue 48 on a GPU, from prebuilt binaries (no cargo): verification that physics backs.
#   experiments/physics-check.sh [OUT_DIR]       KT=.device/bin/kt  TESTS=.device/tests
# Built here with `../shared/scripts/device-pack kt-tuner` (the kt binary and kt-tuner's test executables).
# PARTS=tests,show,attacks (default: all) picks steps; REPEAT=N runs of each attack case (default 5);
# SHARD=K/N and ONLY=REGEX pick attack cases (for calls of bounded time); JOBS=N (at most 3: each kt verify
# may hold a quarter of the GPU's memory for its past-2GiB test, which a fuller GPU leaves out) runs the kt verify cases
# judged on outputs N at a time.
# 1. tests: kt-tuner's GPU tests of the checks, gpu_hacks (the lazy kernel refused at its default launch, a
#    counter past the samples caught by the check after many launches, tests reloaded then run back to back)
#    and gpu_checks (ceilings confirmed by kt's copy and FMA kernel, shares of peak not clamped).
# 2. show: what a user sees: `kt tune` of the lazy kernel (refused, with the reason), of an add whose sidecar
#    claims twice its bytes at 64 M elements (refused: impossibly fast, with the figures), and of a mandelbrot that skips the set's interior
#    (delivered, its share of peak as measured with a note).
# 3. attacks: the attack corpus (tests/corpus/verify/attacks/attacks.toml: kt verify, kt tune, kt transform),
#    every case REPEAT times, a table of expected against got verdicts, flaky ones marked.
# Ends with `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
KT=${KT:-.device/bin/kt}
out=${1:-/tmp/kt-physics-check}
rm -rf "$out"; mkdir -p "$out"
parts=${PARTS:-tests,show,attacks}
want() { [[ ",$parts," == *",$1,"* ]]; }
passed=0; failed=0
step() {
  local name=$1; shift
  echo "=== $name: $*"
  local t0=$SECONDS
  if "$@"; then passed=$((passed + 1)); echo "--- $name ok ($((SECONDS - t0)) s)"
  else failed=$((failed + 1)); echo "--- $name FAILED ($((SECONDS - t0)) s)"; fi
}
# a command that must fail, printing what it said
refused() { if "$@"; then echo "(expected a refusal)"; return 1; fi; return 0; }
attacks=tests/corpus/verify/attacks
if want tests; then
  tests_dir=${TESTS:-.device/tests}
  for name in gpu_hacks gpu_checks; do
    t=
    for f in "$tests_dir"/"$name"-*; do [[ -x $f ]] && t=$f; done
    if [[ -n $t ]]; then
      step "test-$name" env KT_GPU=1 "$t" --include-ignored --test-threads=1
    else
      echo "=== test-$name: no $tests_dir/$name-* (../shared/scripts/device-pack kt-tuner)"; failed=$((failed + 1))
    fi
  done
fi
if want show; then
  step show-lazy refused "$KT" tune "$attacks/lazy_after_40_launches.cu" --test-size --param block_size_x=64,128
  step show-overclaimed refused "$KT" tune "$attacks/overclaimed_bytes.cu" --size n=67108864 --param block_size_x=64,128
  step show-mandelbrot "$KT" tune "$attacks/mandelbrot_skips_interior.cu" --bench-size \
    --param block_size_x=16,32 --param block_size_y=8
fi
want attacks && step attacks python3 experiments/corpus-check/run.py --kt "$KT" --out "$out/attacks" \
  --parts attacks --repeat "${REPEAT:-5}" --jobs "${JOBS:-1}" ${SHARD:+--shard "$SHARD"} ${ONLY:+--only "$ONLY"}
echo "$passed passed, $failed failed"
exit $((failed > 0))
