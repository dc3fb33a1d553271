#!/usr/bin/env bash
# Everything a GPU machine check needs, in one command (no LLM service needed: scripted and replayed answers).
#   experiments/gpu-check.sh [OUT_DIR]        (KT=path/to/kt to use a particular binary)
# 1. kt doctor; 2. kt selftest --gpu; 3. Stages 1+2 (kt testgen) on three suite kernels with scripted answers;
# 4. the autonomous matmul demo from the replay cassette; 5. the smoke experiment and its report; 6. every test
# executable in .device/tests (TESTS=dir to use another) with --include-ignored and KT_GPU=1, so the tests marked
# #[ignore = "needs a GPU"] run; tests about machines *without* a GPU are skipped by name; 7. every corpus kernel
# tuned and verified (experiments/corpus-check/run.py: the suite as people write it, the wild corpus, real programs
# version against version, the wrong-but-plausible kernels and their verdicts); 8. twelve realistic answer styles
# through `kt debug node` on the demo run (experiments/answer-styles/run.sh); 9. the reward-hack corpus
# (tests/corpus/verify/attacks, issue 29): every attack five times through kt verify or kt tune, a table of
# expected against got verdicts, flaky ones marked (experiments/corpus-check/run.py --parts attacks);
# 10. the real-world benchmark (experiments/real-world/run.py run: kernels of public repositories, from the
# carried .realworld/ folder).
# PARTS=doctor,selftest,testgen,demo,smoke,tests,corpus,styles,attacks,realworld (default: all) picks steps, for
# calls that must stay under a time limit (SHARD=K/N runs a part of the real-world kernels).
# Each step prints its own output; the script goes on past a failing step and ends with `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
KT=${KT:-kt}
out=${1:-/tmp/kt-gpu-check}
rm -rf "$out"; mkdir -p "$out"
passed=0; failed=0
step() {
  local name=$1; shift
  echo "=== $name: $*"
  local t0=$SECONDS
  if "$@"; then passed=$((passed + 1)); echo "--- $name ok ($((SECONDS - t0)) s)"
  else failed=$((failed + 1)); echo "--- $name FAILED ($((SECONDS - t0)) s)"; fi
}
parts=${PARTS:-doctor,selftest,testgen,demo,smoke,tests,corpus,styles,attacks,realworld}
want() { [[ ",$parts," == *",$1,"* ]]; }
want doctor && step doctor "$KT" doctor
want selftest && step selftest "$KT" selftest --gpu
if want testgen; then
  for k in matmul vectorAdd matrixAdd; do
    step "testgen-$k" "$KT" testgen "naive-kernels/$k.cu" --llm "scripted:experiments/scripted/$k.toml" --runs-dir "$out/testgen"
  done
fi
want demo && step demo "$KT" transform naive-kernels/matmul.cu --strategy autonomous --replan 3 \
  --llm replay:experiments/cassettes/matmul-autonomous.jsonl --runs-dir "$out/demo"
if want smoke; then
  step smoke "$KT" experiment run experiments/smoke.toml --gpus 0 --quiet --out "$out/smoke"
  step smoke-report "$KT" experiment report "$out/smoke" --format md
fi
want corpus && step corpus python3 experiments/corpus-check/run.py --kt "$KT" --out "$out/corpus" \
  --parts suite,wild,programs,verify
want attacks && step attacks python3 experiments/corpus-check/run.py --kt "$KT" --out "$out/attacks" \
  --parts attacks --repeat "${ATTACK_REPEAT:-5}"
want styles && step answer-styles env KT="$KT" experiments/answer-styles/run.sh "$out/answer-styles"
want realworld && step real-world python3 experiments/real-world/run.py run --kt "$KT" --out "$out/real-world" \
  ${SHARD:+--shard "$SHARD"}
want tests || { echo "$passed passed, $failed failed"; exit $((failed > 0)); }
# Tests that check the behaviour of a machine without a GPU (they stop early with KT_GPU=1): not run here.
# (each calls support::require_no_gpu and fails under KT_GPU=1 rather than pass having checked nothing)
no_gpu_tests=(--skip without_a_gpu --skip for_want_of_a_gpu --skip the_seed_from_kt_seed_is_recorded
  --skip a_manual_run_stops_at_each_prompt_and_resume_with_answer_reaches_the_first_gpu_step
  --skip a_whole_program_is_tuned_as_its_kernel_and_the_user_is_told_host_code_was_left_out
  --skip a_template_block_size_brings_the_block_size_along_unless_told_not_to)
# Ignored tests for tools other than the GPU run only where the tool is (scripts/test.sh runs them elsewhere).
command -v chromium >/dev/null 2>&1 || no_gpu_tests+=(--skip the_html_report_renders_in_a_browser)
command -v shellcheck >/dev/null 2>&1 || no_gpu_tests+=(--skip slurm_scripts_pass_shellcheck)
tests_dir=${TESTS:-.device/tests}
if [[ -d $tests_dir ]]; then
  for t in "$tests_dir"/*; do
    [[ -f $t && -x $t ]] || continue
    step "test-$(basename "$t")" env KT_GPU=1 "$t" --include-ignored "${no_gpu_tests[@]}"
  done
else
  echo "=== tests: no $tests_dir (copy the test executables there to run them)"
fi
echo "$passed passed, $failed failed"
exit $((failed > 0))
