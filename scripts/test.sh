#!/usr/bin/env bash
# kt's test command (README's Quick start; .ci/run runs exactly this). Needs Rust and python3; no GPU, no LLM key.
#   scripts/test.sh [extra cargo test arguments, e.g. -p kt-sandbox]
# 1. Installs what the tests need and is missing, only as root on Debian/Ubuntu (elsewhere it says what to install):
#    python3-venv (kt's own Python environment), shellcheck (SLURM scripts), chromium (HTML report, kt studio),
#    slurm-wlm + munge (SLURM test). As root it also creates the user kt-corpus (useradd -m) for the sandbox's
#    attack corpus, the run-directory tests (tests/trust.rs) and the second-user test, as an ordinary user with a home.
# 2. Python: kt's own virtual environment with the pinned numpy, provisioned by kt's own code as `kt transform`
#    would (crates/kt-sandbox/examples/provision_python.rs). It becomes KT_PYTHON and the first python3 on PATH, so
#    every test uses this one interpreter (KT_PYTHON set by you wins); Kernel Tuner 1.5 (for the test of kt's
#    exports) is installed into it next to numpy.
# 3. cargo test --workspace --locked --no-fail-fast (every test binary runs, failures listed at the end): every test that needs nothing more. Tests that need a GPU or a missing tool are
#    reported as ignored (the GPU ones run in experiments/gpu-check.sh).
# 3b. kt's Python module: built with maturin and tested on kt's fake device (crates/kt-python/tests/run.sh).
# 3c. No circles of `use` between the files of a crate (scripts/file_cycles.py; known ones in file_cycles.allow).
# 3d. `kt tune` and `kt verify` on kt's fake device playing reward hacks (tests/fake_device.rs, NVRTC from 3b's venv).
# 4. The tool-dependent tests (ignored in step 3) whose tool this machine has; the end lists those it could not run.
# A failing step does not stop the others: every step runs, then the end lists what failed and the script exits
# non-zero when a test failed or a step that this machine can do failed.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf '\n== %s\n' "$*"; }
have() { command -v "$1" >/dev/null 2>&1; }
can_apt() { [[ $(id -u) -eq 0 ]] && have apt-get && [[ -f /etc/debian_version ]]; }
apt_updated=0
apt_install() { # apt_install PACKAGE... (root on Debian only)
  if [[ $apt_updated -eq 0 ]]; then apt-get update -qq; apt_updated=1; fi
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}
not_run=()
failed=()

# A one-off build (CI) gains nothing from incremental caches, which take gigabytes beside the binaries.
if [[ -n ${CI:-} ]]; then export CARGO_INCREMENTAL=0; fi
df -h . | tail -1 | awk '{print "disk: " $4 " free of " $2 " where the build goes"}' || true

say "1. system packages"
want=()
venv_works() { local d; d=$(mktemp -d); python3 -m venv "$d/v" >/dev/null 2>&1; local r=$?; rm -rf "$d"; return $r; }
venv_works || want+=(python3-venv)
have shellcheck || want+=(shellcheck)
have chromium || have chromium-browser || want+=(chromium)
# SLURM test (kt-experiments): a one-node SLURM with munge authentication.
have slurmctld || want+=(slurm-wlm)
have munged || want+=(munge)
if [[ ${#want[@]} -eq 0 ]]; then
  echo "nothing to install"
elif can_apt; then
  echo "installing: ${want[*]}"
  apt_install "${want[@]}"
else
  echo "missing: ${want[*]} (not root on Debian: install them yourself; their tests are listed as not run below)"
fi

say "2. Python with numpy (and Kernel Tuner)"
if [[ -n ${KT_PYTHON:-} ]]; then
  python=$KT_PYTHON
  echo "KT_PYTHON=$python (yours)"
else
  python=$(cargo run --quiet --locked -p kt-sandbox --example provision_python)
  echo "kt's own environment: $python"
fi
"$python" -c 'import numpy; print("numpy", numpy.__version__)'
export KT_PYTHON=$python
PATH="$(dirname "$python"):$PATH"
export PATH
# Kernel Tuner 1.5, for kt-tuner's test that runs kt's exports: into the same Python, next to the pinned numpy
# (never replacing it).
if ! "$python" -c 'import importlib.metadata as m, sys; sys.exit(not m.version("kernel_tuner").startswith("1.5"))' \
  2>/dev/null; then
  numpy_version=$("$python" -c 'import numpy; print(numpy.__version__)')
  echo "installing kernel_tuner 1.5 into $python"
  "$python" -m pip install --quiet --disable-pip-version-check 'kernel_tuner==1.5.*' "numpy==$numpy_version"
fi
"$python" -c 'import importlib.metadata as m; print("kernel_tuner", m.version("kernel_tuner"))'

say "3. cargo test --workspace --locked --no-fail-fast $*"
cargo test --workspace --locked --no-fail-fast "$@" || failed+=("3. cargo test --workspace")

say "3b. kt's Python module (kt.tune_kernel) on kt's fake device"
# Builds the module (debug) into target/kt-python-venv with maturin, and NVRTC from NVIDIA's wheel when CUDA_HOME
# has none: both from PyPI, like Kernel Tuner above.
PYTHON=$python crates/kt-python/tests/run.sh || failed+=("3b. kt's Python module")

say "3c. circles of files inside each crate (docs/ARCHITECTURE.md: no two files of a crate import each other)"
# The check itself is tested on its fixtures first: a check that cannot fail proves nothing.
scripts/file_cycles_test.sh || failed+=("3c. the circle check's own test")
python3 scripts/file_cycles.py || failed+=("3c. circles of files")

say "3d. kt tune and kt verify on kt's fake device (reward hacks the fake plays; NVRTC from kt's Python environment)"
# where 3b found NVRTC: CUDA_HOME's, else the wheel in kt's venv
fake_nvrtc=""
for d in "${CUDA_HOME:-/nonexistent}/lib64" "${CUDA_HOME:-/nonexistent}/lib" "$PWD"/target/kt-python-venv/lib/python3*/site-packages/nvidia/cu13/lib; do
  if compgen -G "$d/libnvrtc.so*" >/dev/null; then fake_nvrtc=$d; break; fi
done
if [[ -n $fake_nvrtc ]]; then
  LD_LIBRARY_PATH="$fake_nvrtc${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
    cargo test --workspace --locked --no-fail-fast --test fake_device -- --include-ignored || failed+=("3d. kt on the fake device")
else
  failed+=("3d. kt on the fake device (no NVRTC under CUDA_HOME or in target/kt-python-venv: step 3b installs it)")
fi

say "4. tests that need a tool this machine has"
ran_total=0
# run_group NAME CONDITION CARGO_TEST_ARGS... -- FILTER: runs the (ignored) tests matching FILTER when CONDITION
# holds, and fails when none matched (a renamed test must not make the group pass empty-handed).
run_group() {
  local name=$1 condition=$2; shift 2
  if ! eval "$condition" >/dev/null 2>&1; then not_run+=("$name"); return; fi
  echo "-- $name"
  local log; log=$(mktemp)
  local status=0
  cargo test --locked "$@" 2>&1 | tee "$log" || status=$?
  local ran; ran=$(sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1 \2/p' "$log" \
    | awk '{ n += $1 + $2 } END { print n + 0 }')
  rm -f "$log"
  ran_total=$((ran_total + ran))
  [[ $status -eq 0 ]] || { failed+=("$name"); return; }
  [[ $ran -gt 0 ]] || { echo "no test matched for $name: fix the filter in scripts/test.sh" >&2; failed+=("$name (no test matched)"); }
}
if [[ $(id -u) -eq 0 ]] && unshare --net --mount --fork true >/dev/null 2>&1; then
  run_group "sandbox protections (root: network namespace, uid switch, process limit)" true \
    -p kt-sandbox --lib -- --ignored --skip memory_cgroup_caps
elif unshare --user --map-root-user --net --fork true >/dev/null 2>&1; then
  run_group "sandbox network isolation and process limit (user namespaces)" true \
    -p kt-sandbox --lib -- --ignored network process_limit
  not_run+=("sandbox uid switch (needs root)")
else
  not_run+=("sandbox protections (need root or unprivileged user namespaces)")
fi
# One kernel-held memory cap per run (a cgroup of its own) where cgroup v2 gives the memory controller to the
# cgroups below its top; elsewhere runs' memory is measured (kt doctor's "run memory" says which).
if [[ $(id -u) -eq 0 ]] && grep -qw memory /sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
  run_group "memory cgroup (root, cgroup v2 with the memory controller)" true \
    -p kt-sandbox --lib -- --ignored memory_cgroup_caps
else
  not_run+=("memory cgroup (needs root and cgroup v2 at /sys/fs/cgroup with memory in cgroup.subtree_control)")
fi
# The corpus as an ordinary user with a home directory and files to steal in it (not `nobody`, who owns nothing):
# a throw-away user created here; the test plants a key, shell start-up files, a project and a kt-runs directory in
# its home and runs the corpus as it.
export KT_CORPUS_USER=kt-corpus
corpus_user() { id "$KT_CORPUS_USER" >/dev/null 2>&1 || useradd -m "$KT_CORPUS_USER"; }
run_group "sandbox attack corpus as an ordinary user with a home (root, setpriv, useradd)" \
  "[[ \$(id -u) -eq 0 ]] && have setpriv && corpus_user" \
  -p kt-sandbox --test attacks -- --include-ignored corpus_holds_for_an_ordinary_user
# Run directories and configurations as data, as that same user: provenance and --trust-run, a kt.toml another
# user owns or may write, links in a run, planted answer paths, a run's mode (tests/trust.rs run again as it).
run_group "run directories and kt.toml as an ordinary user with a home (root, setpriv, useradd)" \
  "[[ \$(id -u) -eq 0 ]] && have setpriv && corpus_user" \
  --test trust -- --include-ignored trust_holds_for_an_ordinary_user
# A second local user (that user, against root's run and studio): it can neither read the run nor use the studio.
run_group "a second local user can neither read a run nor act through the studio (root, setpriv, useradd)" \
  "[[ \$(id -u) -eq 0 ]] && have setpriv && corpus_user" \
  --test second_user -- --include-ignored a_second_user_can_neither
run_group "HTML report in chromium" "have chromium || have chromium-browser" \
  --test runs_debug -- --include-ignored the_html_report_renders_in_a_browser
run_group "kt studio in chromium (run list, graph, diff, fork; a transform watched live)" \
  "have chromium || have chromium-browser" \
  --test studio -- --include-ignored studio_in_chromium
run_group "kt studio in chromium as a new user (prompts answered by id, a stopped run's state, the access token)" \
  "have chromium || have chromium-browser" \
  --test studio_steer -- --include-ignored studio_in_chromium
run_group "SLURM scripts through shellcheck" "have shellcheck" \
  -p kt-experiments --test matrix -- --include-ignored slurm_scripts_pass_shellcheck
run_group "HTML report of a stopped run at 700 px in chromium" "have chromium || have chromium-browser" \
  --test records -- --include-ignored fits_700_px

echo
echo "tool-dependent tests run: $ran_total"
if [[ ${#not_run[@]} -gt 0 ]]; then
  printf 'not run here (tool missing; see step 1): %s\n' "${not_run[@]}"
fi
echo "GPU tests are ignored here; on a GPU machine run experiments/gpu-check.sh"
df -h . | tail -1 | awk '{print "disk at the end: " $4 " free"}' || true
du -sh target 2>/dev/null | awk '{print "target/: " $1}' || true
if [[ ${#failed[@]} -gt 0 ]]; then
  printf 'FAILED: %s\n' "${failed[@]}" >&2
  exit 1
fi
